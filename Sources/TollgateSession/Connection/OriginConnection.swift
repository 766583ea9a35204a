import Foundation
import NIOCore
import TollgateLoop
import TollgateTLS

/// One keep-alive connection to an origin (or to the upstream proxy), owned by the pool and
/// leased to one task at a time; or, for an HTTP/2 connection, the pool's record of it and each
/// lease of one of its streams (same ``id``, channel and establishment; its own ``handler``).
final class OriginConnection: DeadlineWatcher, @unchecked Sendable {
    /// Unique within the pool.
    let id: Int
    let key: ConnectionKey
    let channel: any Channel
    let handler: any OriginExchangeHandler
    /// The HTTP/2 connection, when the origin chose `h2` (nil: HTTP/1.1, leased whole).
    let http2: HTTP2OriginConnection?
    /// The transaction metrics' protocol name (ALPN's spelling).
    var protocolName: String { http2 == nil ? "http/1.1" : "h2" }
    /// The timings of making this connection, reported in the first transaction it carries.
    let establishment: Establishment
    /// Whether this connection is TLS and still waits for its trust decision.
    var needsTrustDecision: Bool { establishment.tlsEvaluation != nil && !trustApproved }

    /// How many exchanges this connection has started (only touched by its lessee, one at a time).
    var exchangeCount = 0

    struct Establishment: Sendable {
        var domainLookupStart: Date?
        var domainLookupEnd: Date?
        var connectStart: Date?
        var connectEnd: Date?
        var secureConnectionStart: Date?
        var secureConnectionEnd: Date?
        var remoteAddress: String?
        /// The server's chain and OpenSSL's verdict, for an https connection.
        var tlsEvaluation: TLSPeerEvaluation?
        /// The `connect-to` target the connection was made to (nil: the host itself).
        var target: ConnectionTarget?
    }

    /// The idle timeout's place in the loop's deadline heap (touched on ``eventLoop`` only).
    package var deadlineSlot = DeadlineSlot()
    /// The pool that parks this connection (told when an idle deadline passes).
    weak var pool: ConnectionPool?

    /// Whether the server's trust was accepted (by the session's challenge) for this connection.
    /// Until then no request is sent on it. Touched only by its lessee.
    var trustApproved = false

    init(
        id: Int,
        key: ConnectionKey,
        channel: any Channel,
        handler: any OriginExchangeHandler,
        establishment: Establishment,
        http2: HTTP2OriginConnection? = nil
    ) {
        self.id = id
        self.key = key
        self.channel = channel
        self.handler = handler
        self.establishment = establishment
        self.http2 = http2
    }

    /// A lease of one new stream of this HTTP/2 connection; `ordinal` counts the streams leased
    /// on it (the first reports the connection's establishment, the later ones are reused).
    func streamLease(ordinal: Int) -> OriginConnection? {
        guard let http2 else { return nil }
        let lease = OriginConnection(
            id: id, key: key, channel: channel, handler: HTTP2StreamExchange(connection: http2),
            establishment: establishment, http2: http2
        )
        lease.exchangeCount = ordinal - 1
        lease.trustApproved = http2.isTrustApproved
        return lease
    }

    var eventLoop: any EventLoop { channel.eventLoop }

    /// An idle deadline passed: the pool decides (close it, or it was used since).
    package func deadlinePassed() {
        pool?.idleDeadlinePassed(self)
    }

    /// Runs `body` on the connection's event loop (at once when already there).
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if channel.eventLoop.inEventLoop { body() } else { channel.eventLoop.execute(body) }
    }
}
