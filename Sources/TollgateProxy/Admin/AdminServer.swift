import Foundation
public import NIOCore
import NIOHTTP1
public import NIOPosix
import TollgateCache
import struct TollgateHTTP.HTTPURL
import TollgateTLS
public import TollgatePolicy
public import TollgateSession

/// The admin HTTP API (CONTRACT.md "Admin HTTP API") on its own listener:
///
/// | request | answer |
/// |---|---|
/// | `GET /healthz` | `200 ok` |
/// | `GET /tasks` | JSON list of live tasks: session, identifier, kind, state, URL, bytes |
/// | `POST /config/reload` | reloads the configuration file as SIGHUP does: `200`, or `400` with the problems, one per line |
/// | `GET /offline/misses` | JSON list of what an offline proxy could not serve ([``OfflineMissReport``]) |
/// | `GET /metrics` | the Prometheus text ([``ProxyMetrics``]) |
/// | `GET /har?limit=N` | the recent exchanges as a HAR 1.2 log ([``HARLog``]) |
/// | `GET /` | the live view ([``LiveViewPage``]) |
///
/// Only clients that `access.clients` allows may use it (403 otherwise). Requests from web pages
/// are refused too (403): one with an `Origin` field (a browser's cross-site POST could otherwise
/// reload the configuration or purge the cache) — except a GET whose `Origin` is the admin
/// listener itself as its `Host` names it (the live view's own reads, should a browser send
/// one) — and one whose `Host` is a name other than `localhost` (a DNS-rebinding page reaching
/// the loopback listener under its own name). Scripts and curl send neither. Anything else is
/// 404 (405 for a known path with the wrong method).
public final class AdminServer: Sendable {
    /// The address actually bound.
    public let boundAddress: ListenAddress
    private let channel: any Channel

    private init(channel: any Channel, requested: ListenAddress) {
        self.channel = channel
        let local = channel.localAddress
        self.boundAddress = ListenAddress(host: local?.ipAddress ?? requested.host, port: local?.port ?? requested.port)
    }

    /// Binds the admin listener.
    /// - Parameters:
    ///   - address: where to listen.
    ///   - runtime: the policy whose sessions `/tasks` lists and which `/config/reload` reloads.
    ///   - ownListeners: the proxy's own addresses; the admin listener is added (no request may loop to it).
    /// - Throws: ``ProxyServerError/cannotListen(_:reason:)``.
    public static func start(
        listen address: ListenAddress,
        runtime: PolicyRuntime,
        ownListeners: OwnListeners,
        metrics: ProxyMetrics? = nil,
        cache: ResponseCache? = nil,
        interceptor: Interceptor? = nil,
        offline: OfflineMode? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AdminServer {
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: group)
                .backingOffAcceptFailures(label: "admin \(address)")
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.configureHTTPServerPipeline()
                        try child.pipeline.syncOperations.addHandler(
                            AdminHandler(
                                runtime: runtime, metrics: metrics, cache: cache, interceptor: interceptor, offline: offline
                            )
                        )
                    }
                }
                .bind(to: address)
                .get()
        } catch {
            throw ProxyServerError.cannotListen(address, reason: describe(error))
        }
        let server = AdminServer(channel: channel, requested: address)
        ownListeners.register(server.boundAddress)
        return server
    }

    /// Stops listening and closes the admin connections.
    public func shutdown() async {
        try? await channel.close()
    }
}

/// Answers one admin connection's requests.
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let runtime: PolicyRuntime
    private var head: HTTPRequestHead?
    private var allowed = false

    private let metrics: ProxyMetrics?
    private let cache: ResponseCache?
    private let interceptor: Interceptor?
    private let offline: OfflineMode?

    init(
        runtime: PolicyRuntime, metrics: ProxyMetrics?, cache: ResponseCache?, interceptor: Interceptor?,
        offline: OfflineMode?
    ) {
        self.offline = offline
        self.interceptor = interceptor
        self.metrics = metrics
        self.cache = cache
        self.runtime = runtime
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let access = runtime.configuration.access
        allowed =
            context.channel.remoteAddress?.networkBytes.map(access.allowsClient)
            ?? false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            let (status, contentType, body) = answer(head)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: contentType)
            headers.add(name: "Content-Length", value: String(body.utf8.count))
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil
            )
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            let keepAlive = head.isKeepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
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

    private func answer(_ head: HTTPRequestHead) -> (HTTPResponseStatus, String, String) {
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
            guard let url = Self.queryValue("url", in: head.uri), !url.isEmpty else {
                return (.badRequest, "text/plain", "POST /cache/purge?url=URL\n")
            }
            guard !cache.store.isReadOnly else { return (.conflict, "text/plain", "the cache is read-only (cache.read-only)\n") }
            if url.hasSuffix("*") {
                // `URL*`: every URL stored under that prefix (nginx's purge of `…*`).
                guard let prefix = CacheStore.urlPrefix(String(url.dropLast())) else {
                    return (.badRequest, "text/plain", "POST /cache/purge?url=URL* needs an absolute http(s) URL with a path before the *\n")
                }
                let removed = (try? cache.store.remove(urlPrefix: prefix)) ?? 0
                return (.ok, "text/plain", "purged \(removed)\n")
            }
            // Stored under the rule's cache.key normalization, as the session stores it.
            let keyURL = HTTPURL(string: url).map { runtime.decisions.cacheKeyURL(for: $0).absoluteString } ?? url
            let removed = (try? cache.store.remove(url: keyURL)) ?? 0
            return (.ok, "text/plain", "purged \(removed)\n")
        case (.GET, "/upstreams"):
            return (.ok, "application/json", UpstreamListing.json(runtime: runtime) + "\n")
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
            (_, "/cache/purge"), (_, "/offline/misses"), (_, "/har"), (_, "/"), (_, "/ca.pem"), (_, "/upstreams"):
            return (.methodNotAllowed, "text/plain", "method not allowed\n")
        default:
            return (.notFound, "text/plain", "not found\n")
        }
    }
}
