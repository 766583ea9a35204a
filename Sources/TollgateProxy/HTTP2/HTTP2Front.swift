import NIOCore
import NIOHTTP2
import TollgatePolicy

extension ChannelPipeline.SynchronousOperations {
    /// Makes a client connection an HTTP/2 one (RFC 9113) whose streams are served as the
    /// listener serves HTTP/1.1 requests: one call, made on the connection's event loop when its
    /// next bytes are the HTTP/2 connection preface, whether the connection is plain (h2c with
    /// prior knowledge, ``HTTP2PrefaceSniffer``) or TLS that negotiated ALPN `h2`.
    ///
    /// Installs, after whatever is in the pipeline already (TLS):
    /// - NIO's `NIOHTTP2Handler`, with the protections of ``HTTP2FrontSettings`` (concurrent
    ///   streams, header list size, stream resets per 30 s — rapid reset, CVE-2023-44487 —,
    ///   CONTINUATION floods), each stream a child channel with an ``HTTP2StreamHandler``;
    /// - NIO's `NIOHTTP2ServerConnectionManagementHandler`: GOAWAY after `client-idle-timeout`
    ///   with no stream open, and a graceful GOAWAY drain on `ChannelShouldQuiesceEvent` (the
    ///   server's shutdown): streams in flight finish, no new one starts;
    /// - ``HTTP2ConnectionErrorHandler``: the connection closes after a connection error's GOAWAY.
    ///
    /// - Parameters:
    ///   - environment: the listener's environment (its mode decides the requests' targets).
    ///   - remoteAddress: the client's address (`channel.remoteAddress`), for `access.clients`
    ///     and the access log.
    ///   - clientTLS: the TLS version the client negotiated (a TLS listener, an intercepted
    ///     CONNECT); nil for h2c. The access log's `client_tls` and `X-Forwarded-Proto`.
    ///   - position: where the handlers go: last (behind TLS, or a plain connection), or before
    ///     the HTTP/1.1 handler an intercepted CONNECT's connection is replacing.
    func configureHTTP2Front(
        environment: ListenerEnvironment,
        remoteAddress: SocketAddress?,
        clientTLS: ClientTLS? = nil,
        position: ChannelPipeline.SynchronousOperations.Position = .last
    ) throws {
        let settings = HTTP2FrontSettings(environment.policy.limits)
        let front = NIOLoopBound(
            HTTP2FrontConnection(environment: environment, remoteAddress: remoteAddress, pipeline: self, clientTLS: clientTLS),
            eventLoop: eventLoop
        )
        let manager = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: eventLoop,
            configuration: settings.management
        )
        let handler = NIOHTTP2Handler(
            mode: .server,
            eventLoop: eventLoop,
            connectionConfiguration: settings.connection,
            streamConfiguration: settings.stream,
            streamDelegate: manager.http2StreamDelegate
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                // Counted by its channel, whatever handlers it ends with (an intercepted CONNECT
                // replaces the stream handler).
                front.value.streamOpened()
                stream.closeFuture.whenComplete { _ in front.value.streamClosed() }
                try stream.pipeline.syncOperations.addHandler(HTTP2StreamHandler(connection: front.value))
            }
        }
        let errors = HTTP2ConnectionErrorHandler(front: front.value)
        try addHandler(errors, position: position)
        try addHandler(manager, position: .before(errors))
        try addHandler(handler, position: .before(manager))
    }
}

/// The settings of an HTTP/2 client connection, from the policy's `limits`.
struct HTTP2FrontSettings {
    var connection = NIOHTTP2Handler.ConnectionConfiguration()
    var stream = NIOHTTP2Handler.StreamConfiguration()
    var management: NIOHTTP2ServerConnectionManagementHandler.Configuration

    /// The window of the stream resets counted (`http2-max-resets` per this long).
    static let resetWindow = TimeAmount.seconds(30)

    init(_ limits: PolicyConfiguration.Limits) {
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: limits.http2MaxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: limits.http2MaxHeaderListSize),
            // No server push from a proxy.
            HTTP2Setting(parameter: .enablePush, value: 0),
            // Extended CONNECT (RFC 8441): WebSockets on streams, relayed as HTTP/1.1 upgrades.
            HTTP2Setting(parameter: .enableConnectProtocol, value: 1),
        ]
        // NIO's default bound on CONTINUATION frames in a row (a flood is a connection error,
        // ENHANCE_YOUR_CALM) stays: the header list size bounds the block's bytes too.
        stream.streamResetFrameRateLimit.maximumCount = limits.http2MaxResets
        stream.streamResetFrameRateLimit.windowLength = Self.resetWindow
        management = .init(
            maxIdleTime: TimeAmount(limits.clientIdleTimeout),
            maxAge: nil,
            // The server's shutdown closes what is left after its own grace period.
            maxGraceTime: nil,
            keepalive: nil
        )
    }
}
