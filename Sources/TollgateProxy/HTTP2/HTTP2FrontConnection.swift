import NIOCore
import TollgatePolicy

/// What the streams of one HTTP/2 client connection share: the listener's environment, the
/// connection's ``ConnectionMemo`` (the client's address, routes, hosts), and whether the client
/// may use the proxy at all (`access.clients`, decided once per connection as for HTTP/1.1).
///
/// Made by ``NIOCore/ChannelPipeline/SynchronousOperations/configureHTTP2Front(environment:)``;
/// used on the connection's event loop only (its streams run there too).
final class HTTP2FrontConnection {
    let environment: ListenerEnvironment
    let memo: ConnectionMemo
    let clientAllowed: Bool
    /// The policy's generation when the connection began: what it decided once (the client's
    /// access, the HTTP/2 settings, the TLS certificate) came from those rules.
    let generation: Int
    /// Whether the connection was asked to drain because the rules were reloaded.
    private(set) var drainingForReload = false
    /// Streams whose channels are open.
    private(set) var openStreams = 0
    /// Closes the connection once ``openStreams`` is zero (after a GOAWAY for too many streams).
    private var closeWhenIdle: (() -> Void)?

    init(
        environment: ListenerEnvironment, remoteAddress: SocketAddress?, pipeline: ChannelPipeline.SynchronousOperations,
        clientTLS: ClientTLS? = nil
    ) {
        self.environment = environment
        let client = ConnectionMemo.forClient(at: remoteAddress, in: pipeline, access: environment.policy.access, clientTLS: clientTLS)
        memo = client.memo
        clientAllowed = client.allowed
        generation = environment.policy.generation
    }

    /// A stream's channel opened.
    func streamOpened() { openStreams += 1 }

    /// A stream's channel closed: the connection closes if it was only waiting for its streams.
    func streamClosed() {
        openStreams = max(0, openStreams - 1)
        if openStreams == 0, let close = closeWhenIdle {
            closeWhenIdle = nil
            close()
        }
    }

    /// Calls `close` once no stream is open (at once when none is): the streams NIO took before
    /// its GOAWAY for too many streams are served, then the connection ends instead of waiting
    /// for its idle timeout.
    func closeWhenStreamsEnd(_ close: @escaping () -> Void) {
        if openStreams == 0 {
            close()
        } else {
            closeWhenIdle = close
        }
    }

    /// A stream starts: when the rules were reloaded since the connection began, the connection
    /// is asked (once) to drain as at shutdown — GOAWAY, the streams in flight (this one too)
    /// finish, and the client opens a new connection under the new rules (as nginx's reload
    /// retires its old workers' connections). Idle connections end by their idle timeout.
    /// Returns whether it asked now.
    func streamStarted(on connectionChannel: (any Channel)?) -> Bool {
        guard !drainingForReload, environment.policy.generation != generation, let connectionChannel else { return false }
        drainingForReload = true
        // Not from inside the HTTP/2 handler's read of this stream's HEADERS: its GOAWAY would be
        // written re-entrantly and wait for a flush. On the next turn of the loop, as the
        // server's shutdown asks.
        connectionChannel.eventLoop.execute {
            connectionChannel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        return true
    }
}
