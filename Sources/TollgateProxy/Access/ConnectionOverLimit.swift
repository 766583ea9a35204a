import NIOCore
import TollgatePolicy

/// Marks a client connection accepted past `access.connection-limit`: the connection's handlers
/// find it (``limit(in:access:)``) when they make its ``ConnectionMemo``, and its requests are then
/// answered `429 too-many-connections`. It passes everything through.
///
/// A mark in the pipeline rather than a flag handed to each handler: the handler that answers
/// requests is made after the TLS handshake, or after the first bytes of an `h2c` listener, by
/// handlers that know nothing of the limit.
final class ConnectionOverLimit: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// The limit the client was over.
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// The limit the client of the connection whose pipeline this is was over when it
    /// connected; nil when it was not, or when `access` sets no limit (then no pipeline is
    /// searched). On the connection's event loop.
    static func limit(in pipeline: ChannelPipeline.SynchronousOperations, access: PolicyConfiguration.Access) -> Int? {
        guard access.connectionLimit != nil else { return nil }
        return (try? pipeline.handler(type: ConnectionOverLimit.self))?.limit
    }
}
