import TollgateHTTP

/// Where a request head goes, decided from its target and the listener's mode before any task
/// exists: an HTTP URL to load, a tunnel to open, or an answer of the proxy's own.
enum RequestTarget {
    /// Load this URL; its host is canonical (``CanonicalHost``).
    case http(HTTPURL)
    /// Open a tunnel to this host and port (CONNECT).
    case connect(CanonicalHost, Int)
    /// Answer with this; nothing goes upstream.
    case refuse(OwnResponse)

    /// Classifies a request head received by a listener in `mode`. `canonical` makes a host
    /// canonical (``CanonicalHost/parse(_:)``; a connection remembers its last answer).
    static func classify(
        _ head: ClientRequestHead,
        mode: ListenerMode,
        canonical: (String) throws(CanonicalHost.Invalid) -> CanonicalHost = { host throws(CanonicalHost.Invalid) in
            try CanonicalHost.parse(host)
        }
    ) -> RequestTarget {
        switch mode {
        case .forward: forward(head, canonical: canonical)
        case .reverse(let upstream): reverse(head, upstream: upstream)
        case .intercepted(let origin): intercepted(head, origin: origin)
        }
    }

    /// Forward mode: absolute-form requests, and CONNECT in authority-form.
    private static func forward(
        _ head: ClientRequestHead,
        canonical: (String) throws(CanonicalHost.Invalid) -> CanonicalHost
    ) -> RequestTarget {
        let target = head.target
        if head.isConnect { return connect(target) }
        if target.hasPrefix("/") || target == "*" {
            return .refuse(
                OwnResponse(
                    .badRequest,
                    "this is a forward proxy: the request target must be an absolute http:// URL, not '\(target)'"
                )
            )
        }
        var url: HTTPURL
        do throws(HTTPURL.ParseError) {
            url = try HTTPURL.parse(target)
        } catch {
            return .refuse(OwnResponse(.badRequest, "bad request target: \(error.description)"))
        }
        guard url.scheme == "http" || url.scheme == "https" else {
            return .refuse(OwnResponse(.badRequest, "only http:// URLs can be forwarded, not \(url.scheme)://"))
        }
        do throws(CanonicalHost.Invalid) {
            let host = try canonical(url.host)
            // Set only when it changes: setting the host copies the URL's parts when shared.
            if host.text != url.host { url.host = host.text }
        } catch {
            return .refuse(OwnResponse(.badRequest, "bad request target: \(error.description)"))
        }
        return .http(url)
    }

    /// `CONNECT host:port`: the port is required; the host is made canonical.
    private static func connect(_ target: String) -> RequestTarget {
        let authority: (host: String, port: Int?)
        do throws(HTTPURL.ParseError) {
            authority = try HTTPURL.parseAuthority(Substring(target))
        } catch {
            return .refuse(OwnResponse(.badRequest, "bad CONNECT target '\(target)': \(error.description)"))
        }
        guard let port = authority.port else {
            return .refuse(OwnResponse(.badRequest, "a CONNECT target is HOST:PORT, not '\(target)'"))
        }
        do throws(CanonicalHost.Invalid) {
            return .connect(try CanonicalHost.parse(authority.host), port)
        } catch {
            return .refuse(OwnResponse(.badRequest, "bad CONNECT target: \(error.description)"))
        }
    }

    /// Inside an intercepted tunnel: requests go to the CONNECT target, whatever their Host says.
    /// An absolute-form target must name that origin; CONNECT cannot be nested.
    private static func intercepted(_ head: ClientRequestHead, origin: HTTPURL) -> RequestTarget {
        if head.isConnect {
            return .refuse(OwnResponse(.badRequest, status: 405, "CONNECT is not accepted inside an intercepted tunnel"))
        }
        if !head.target.hasPrefix("/"), head.target != "*" {
            guard let url = HTTPURL(string: head.target), url.scheme == origin.scheme,
                url.host.lowercased() == origin.host.lowercased(), url.effectivePort == origin.effectivePort
            else {
                return .refuse(
                    OwnResponse(
                        .badRequest,
                        "inside the tunnel to \(origin.authority) only requests to it are served, not '\(head.target)'"
                    )
                )
            }
        }
        return reverse(head, upstream: origin)
    }

    /// Reverse mode: every request goes to the upstream; the path (origin-form, or the path of an
    /// absolute-form target) is appended to the upstream's own path.
    private static func reverse(_ head: ClientRequestHead, upstream: HTTPURL) -> RequestTarget {
        if head.isConnect {
            return .refuse(OwnResponse(.badRequest, status: 405, "CONNECT is not accepted by a reverse listener"))
        }
        var pathAndQuery: String
        if head.target.hasPrefix("/") {
            pathAndQuery = head.target
        } else if head.target == "*", head.method == "OPTIONS" {
            pathAndQuery = "*"
        } else if let url = HTTPURL(string: head.target) {
            pathAndQuery = url.pathAndQuery
        } else {
            return .refuse(OwnResponse(.badRequest, "bad request target '\(head.target)'"))
        }
        if let hash = pathAndQuery.firstUTF8Offset(of: UInt8(ascii: "#")) {
            pathAndQuery = String(pathAndQuery[..<pathAndQuery.utf8Index(at: hash)])
        }
        let upstreamPath = upstream.path
        var url = upstream
        if upstreamPath == "/" || pathAndQuery == "*" {
            url.pathAndQuery = pathAndQuery
        } else {
            url.pathAndQuery = String(upstreamPath.hasSuffix("/") ? upstreamPath.dropLast() : upstreamPath[...]) + pathAndQuery
        }
        return .http(url)
    }
}
