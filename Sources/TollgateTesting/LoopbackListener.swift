public import NIOCore
import NIOPosix

/// A TCP listener on 127.0.0.1, port 0, each accepted connection served by a new handler: the
/// bootstrap the test servers share.
public enum LoopbackListener {
    /// Binds and returns the listening channel.
    /// - Parameters:
    ///   - halfClosure: whether a client's EOF is a half-close (the server may still write).
    ///   - makeHandler: the handler of one accepted connection (called on its event loop).
    public static func bind(
        halfClosure: Bool = false,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        _ makeHandler: @escaping @Sendable () -> any ChannelHandler
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: halfClosure)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture { try child.pipeline.syncOperations.addHandler(makeHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }
}
