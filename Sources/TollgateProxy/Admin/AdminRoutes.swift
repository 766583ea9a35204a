import Foundation
import NIOCore
import NIOHTTP1
import TollgateCache
import struct TollgateHTTP.HTTPURL
import TollgatePolicy
import TollgateSession
import TollgateTLS

/// The admin API's routes (``AdminServer``): one request head in, one answer out. A value shared
/// with the thread pool that runs the routes that may block (``mayBlock(_:)``).
struct AdminRoutes: Sendable {
    /// Status, content type and body of an answer.
    typealias Answer = (HTTPResponseStatus, String, String)

    let runtime: PolicyRuntime
    let metrics: ProxyMetrics?
    let cache: ResponseCache?
    let interceptor: Interceptor?
    let offline: OfflineMode?
    /// Whether `access.clients` lets the connection's client in (``admit(_:)``); nobody until then.
    private(set) var allowed = false

    /// The routes, admitting nobody until ``admit(_:)``.
    init(runtime: PolicyRuntime, metrics: ProxyMetrics?, cache: ResponseCache?, interceptor: Interceptor?, offline: OfflineMode?) {
        self.runtime = runtime
        self.metrics = metrics
        self.cache = cache
        self.interceptor = interceptor
        self.offline = offline
    }

    /// Decides, once when the connection is made, whether its client at `remote` may use them.
    mutating func admit(_ remote: SocketAddress?) {
        let access = runtime.configuration.access
        allowed = remote?.networkBytes.map(access.allowsClient) ?? false
    }

    /// The routes that may wait on the disk: a purge (a prefix walks every stored URL; any purge
    /// waits for the store's write lock) and a reload (it reads the configuration's files).
    static func mayBlock(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .POST else { return false }
        let path = head.uri.split(separator: "?", maxSplits: 1).first ?? Substring(head.uri)
        return path == "/cache/purge" || path == "/config/reload"
    }

    /// The percent-decoded value of `name` in the request target's query.
    static func queryValue(_ name: String, in uri: String) -> String? {
        guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.first.map(String.init) == name {
                let raw = parts.count > 1 ? String(parts[1]) : ""
                return raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
            }
        }
        return nil
    }

    /// `POST /cache/purge?url=URL` (every variant of the URL, under its rule's `cache.key`),
    /// `?url=URL*` (every URL under a prefix, as nginx's purge of `…*`) or `?tag=TAG` (every
    /// response whose `cache.tag-header` names a tag; several separated by spaces or commas, as the
    /// field separates them); with `soft=1` marked stale instead of removed.
    private func purge(_ uri: String, in store: CacheStore) -> Answer {
        let selection: CachePurgeSelection
        if let text = Self.queryValue("tag", in: uri) {
            guard let field = runtime.configuration.cache.tagHeader else {
                return (.badRequest, "text/plain", "purging by tag needs cache.tag-header (the response field holding the tags)\n")
            }
            selection = .tags(in: [text], field: field)
            guard case .tags(let tags, _) = selection, !tags.isEmpty else { return (.badRequest, "text/plain", "POST /cache/purge?tag=TAG\n") }
        } else if let url = Self.queryValue("url", in: uri), !url.isEmpty {
            // Stored under the rule's cache.key normalization, as the session stores it.
            guard let target = CachePurgeSelection.target(url, keyURL: runtime.decisions.cacheKeyURL(for:)) else {
                return (.badRequest, "text/plain", "POST /cache/purge?url=URL* needs an absolute http(s) URL with a path before the *\n")
            }
            selection = target
        } else {
            return (.badRequest, "text/plain", "POST /cache/purge?url=URL or ?tag=TAG\n")
        }
        guard !store.isReadOnly else { return (.conflict, "text/plain", "the cache is read-only (cache.read-only)\n") }
        let soft = Self.queryValue("soft", in: uri) == "1"
        let count = (try? store.purge(selection, soft: soft)) ?? 0
        return (.ok, "text/plain", CachePurgeSelection.answer(count, soft: soft))
    }

    /// Why a request looks like it comes from a web page, or nil.
    static func browserRefusal(_ headers: HTTPHeaders, method: HTTPMethod = .POST) -> String? {
        let host = headers.first(name: "Host")
        if let origin = headers.first(name: "Origin") {
            // A page of this listener reading from it (GET only): its Origin is the listener as
            // the page's own address names it. Any other page, and any POST, is refused.
            let sameOrigin = (method == .GET || method == .HEAD) && host.map { origin == "http://" + $0 } == true
            if !sameOrigin { return "requests from web pages are refused (Origin: \(origin))" }
        }
        guard let host else { return nil }
        if let name = try? HTTPURL.parseAuthority(Substring(host)).host,
            name == "localhost" || CIDR.addressBytes(name) != nil
        {
            return nil
        }
        return "the admin API answers only to an address or localhost in Host, not '\(host)'"
    }

    /// The answer to `head`.
    func answer(_ head: HTTPRequestHead) -> Answer {
        guard allowed else { return (.forbidden, "text/plain", "client not allowed (access.clients)\n") }
        if let refusal = Self.browserRefusal(head.headers, method: head.method) { return (.forbidden, "text/plain", refusal + "\n") }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        switch (head.method, path) {
        case (.GET, "/healthz"), (.HEAD, "/healthz"):
            return (.ok, "text/plain", "ok\n")
        case (.GET, "/tasks"):
            return (.ok, "application/json", TaskListing.json(runtime: runtime) + "\n")
        case (.POST, "/config/reload"):
            let problems = runtime.reload()
            if problems.isEmpty {
                return (.ok, "text/plain", "reloaded\n" + (runtime.awaitingRestartNotice.map { $0 + "\n" } ?? ""))
            }
            return (.badRequest, "text/plain", problems.map { "\($0)\n" }.joined())
        case (.GET, "/metrics"):
            let text = (metrics ?? ProxyMetrics()).exposition(
                runtime: runtime, cache: cache, interceptor: interceptor, offline: offline
            )
            return (.ok, "text/plain; version=0.0.4; charset=utf-8", text)
        case (.GET, "/har"):
            guard let metrics else { return (.notFound, "text/plain", "no exchanges are kept\n") }
            var limit: Int?
            if let text = Self.queryValue("limit", in: head.uri) {
                guard let value = Int(text), value >= 0 else {
                    return (.badRequest, "text/plain", "GET /har?limit=N (N a whole number)\n")
                }
                limit = value
            }
            let har = HARLog.json(HARLog.inStartOrder(metrics.journal.recent(), limit: limit))
            return (.ok, "application/json", String(decoding: har, as: UTF8.self))
        case (.GET, "/"):
            return (.ok, "text/html; charset=utf-8", LiveViewPage.html)
        case (.GET, "/cache/stats"):
            guard let cache, let stats = try? cache.store.statistics() else {
                return (.notFound, "text/plain", "no cache\n")
            }
            // Whether the cache is written to, and whether the proxy goes upstream at all: what a
            // build's failures depend on (the live view shows both).
            let isOffline = offline?.isOffline(runtime) ?? runtime.configuration.offline
            let json =
                "{\"entries\":\(stats.entries),\"bytes\":\(stats.bytes),\"capacity\":\(stats.capacity),"
                + "\"hits\":\(stats.hits),\"misses\":\(stats.misses),\"evictions\":\(stats.evictions),"
                + "\"read_only\":\(cache.store.isReadOnly),\"offline\":\(isOffline)}\n"
            return (.ok, "application/json", json)
        case (.POST, "/cache/purge"):
            guard let cache else { return (.notFound, "text/plain", "no cache\n") }
            return purge(head.uri, in: cache.store)
        case (.GET, "/upstreams"):
            return (.ok, "application/json", UpstreamListing.json(runtime: runtime) + "\n")
        case (.GET, "/listeners"):
            let listing = ListenerListing.json(configuration: runtime.configuration, fetchers: metrics?.stapleFetchers ?? [:])
            return (.ok, "application/json", listing + "\n")
        case (.GET, "/ca.pem"):
            // The interception CA's certificate (public), for a client to trust: what mitmproxy's
            // mitm.it page hands out, reachable from a container that cannot read the CA directory.
            guard let interceptor else {
                return (.notFound, "text/plain", "no interception CA is loaded (tollgate ca init, then restart)\n")
            }
            return (.ok, "application/x-pem-file", interceptor.authority.certificate.pemString)
        case (.GET, "/offline/misses"):
            let json = offline?.misses.json() ?? Data("[]\n".utf8)
            return (.ok, "application/json", String(decoding: json, as: UTF8.self))
        case (_, "/healthz"), (_, "/tasks"), (_, "/config/reload"), (_, "/metrics"), (_, "/cache/stats"),
            (_, "/cache/purge"), (_, "/offline/misses"), (_, "/har"), (_, "/"), (_, "/ca.pem"), (_, "/upstreams"), (_, "/listeners"):
            return (.methodNotAllowed, "text/plain", "method not allowed\n")
        default:
            return (.notFound, "text/plain", "not found\n")
        }
    }
}
