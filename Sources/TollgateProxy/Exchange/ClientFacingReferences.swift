import TollgateHTTP
import TollgatePolicy

/// A response's `Location`, `Content-Location`, `Refresh` and `Set-Cookie` written for the URL
/// the client asked for, when the request went elsewhere — nginx's `proxy_redirect default` (and, for a
/// cookie's `Domain` and `Path`, what `proxy_cookie_domain` and `proxy_cookie_path` are set to).
///
/// Two places send a request to a URL the client did not name: a host rule's `map-remote`, and a
/// reverse listener, which loads its `upstream` with the upstream's `Host`. An origin there writes
/// redirects and cookies for itself (`Location: http://127.0.0.1:8080/login`), which would send
/// the client around the mapping, or to an address it cannot reach. Only what the client gets is
/// rewritten; the stored copy keeps the origin's fields (a hit is rewritten for its own client).
struct ClientFacingReferences {
    /// The mapping the request went through (a reverse listener's is `/` to its upstream).
    let mapping: HostRule.RemoteMapping
    /// The URL loaded (a reference resolves against it).
    let loaded: HTTPURL
    /// The URL the client asked for: its scheme and authority are what references get.
    let client: HTTPURL

    /// `Refresh: 5; url=…` (not in an RFC, but browsers follow it; nginx rewrites it with `Location`).
    static let refresh = HeaderName("Refresh")

    /// Whether `fields` has a line this may rewrite (a lookup by name keys, no value read).
    static func mayApply(to fields: HeaderFields) -> Bool {
        fields.contains(.location) || fields.contains(.setCookie) || fields.contains(.contentLocation) || fields.contains(refresh)
    }

    /// Rewrites the values that point into the mapping; the rest is left as sent.
    func apply(to fields: inout HeaderFields) {
        for name in [HeaderName.location, .contentLocation] {
            guard let value = fields[name], let rewritten = mapping.clientReference(for: value, loaded: loaded, client: client)
            else { continue }
            fields.replaceOrAdd(name: name, value: rewritten)
        }
        if let value = fields[Self.refresh], let rewritten = refreshValue(value) {
            fields.replaceOrAdd(name: Self.refresh, value: rewritten)
        }
        let cookies = fields.values(for: .setCookie)
        guard !cookies.isEmpty else { return }
        let rewritten = cookies.map { mapping.clientSetCookie($0, client: client) }
        guard rewritten.contains(where: { $0 != nil }) else { return }
        fields.remove(.setCookie)
        for (original, new) in zip(cookies, rewritten) { fields.add(name: .setCookie, value: new ?? original) }
    }

    /// A `Refresh` value (`DELAY; url=REFERENCE`, the reference perhaps quoted) with its
    /// reference written for the client, or nil when it has none under the mapping.
    func refreshValue(_ value: String) -> String? {
        guard let semicolon = value.firstIndex(of: ";") else { return nil }
        var rest = value[value.index(after: semicolon)...].drop { $0 == " " || $0 == "\t" }
        guard rest.prefix(4).lowercased() == "url=" else { return nil }
        let head = value[..<rest.index(rest.startIndex, offsetBy: 4)]
        rest = rest.dropFirst(4)
        var quote = ""
        if let first = rest.first, first == "'" || first == "\"", rest.count >= 2, rest.last == first {
            quote = String(first)
            rest = rest.dropFirst().dropLast()
        }
        guard let rewritten = mapping.clientReference(for: String(rest), loaded: loaded, client: client) else { return nil }
        return head + quote + rewritten + quote
    }

    /// The client's URL behind a reverse listener: the listener's scheme and the request's `Host`
    /// (nil without a usable one — the reference is then left alone).
    static func reverseClient(host: String?, secure: Bool) -> HTTPURL? {
        guard let host, !host.isEmpty, let authority = try? HTTPURL.parseAuthority(Substring(host)) else { return nil }
        return HTTPURL(scheme: secure ? "https" : "http", host: authority.host, port: authority.port)
    }
}
