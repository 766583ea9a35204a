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
    ///   - inheritedSocket: a socket bound to `address` and listening, passed by a service
    ///     manager (``InheritedListeners``), served instead of binding one.
    /// - Throws: ``ProxyServerError/cannotListen(_:reason:)``.
    public static func start(
        listen address: ListenAddress,
        runtime: PolicyRuntime,
        ownListeners: OwnListeners,
        metrics: ProxyMetrics? = nil,
        cache: ResponseCache? = nil,
        interceptor: Interceptor? = nil,
        offline: OfflineMode? = nil,
        inheritedSocket: CInt? = nil,
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
                                runtime: runtime, metrics: metrics, cache: cache, interceptor: interceptor, offline: offline,
                                threadPool: .singleton
                            )
                        )
                    }
                }
                .bind(to: address, inheriting: inheritedSocket)
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

/// Answers one admin connection's requests: the routes (``AdminRoutes``) on the connection's event
/// loop, except those that may wait on the disk — a prefix purge walks every stored URL, a reload
/// reads the configuration's files — which run on a thread pool, so `/healthz` on other
/// connections answers meanwhile.
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Where routes that may block run; nil runs them inline (an EmbeddedChannel in tests).
    private let threadPool: NIOThreadPool?
    /// The routes, for the client the connection is from (admitted when the handler is added).
    private var routes: AdminRoutes
    private var head: HTTPRequestHead?

    init(
        runtime: PolicyRuntime, metrics: ProxyMetrics?, cache: ResponseCache?, interceptor: Interceptor?,
        offline: OfflineMode?, threadPool: NIOThreadPool? = nil
    ) {
        routes = AdminRoutes(runtime: runtime, metrics: metrics, cache: cache, interceptor: interceptor, offline: offline)
        self.threadPool = threadPool
    }

    func handlerAdded(context: ChannelHandlerContext) {
        routes.admit(context.channel.remoteAddress)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            let routes = self.routes
            self.head = nil
            guard let threadPool, AdminRoutes.mayBlock(head) else {
                respond(routes.answer(head), to: head, context: context)
                return
            }
            // The connection reads nothing more until this answer is written (HTTP/1.1 in order).
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            threadPool.runIfActive(eventLoop: context.eventLoop) { routes.answer(head) }.whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let answer): handler.respond(answer, to: head, context: context)
                case .failure: context.close(promise: nil)
                }
            }
        }
    }

    private func respond(_ answer: AdminRoutes.Answer, to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (status, contentType, body) = answer
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
