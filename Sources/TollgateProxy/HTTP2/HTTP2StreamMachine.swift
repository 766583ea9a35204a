/// What one HTTP/2 stream of a client does next: its request's frames, its response, and the
/// pacing of reads (no read, no WINDOW_UPDATE: the client's window closes and it stops sending).
/// Events in, actions out; run by ``HTTP2StreamHandler``.
struct HTTP2StreamMachine: Hashable, Sendable {
    /// Where the stream is.
    enum Phase: Hashable, Sendable {
        /// No HEADERS yet.
        case awaitingHeaders
        /// The request head was taken; the exchange runs.
        case serving
        /// The response ended (or was cut short); the stream ends.
        case done
        /// The stream channel closed.
        case closed
    }

    /// What to do with a HEADERS frame.
    enum HeadersAction: Hashable, Sendable {
        /// The request's head: map it and start the exchange.
        case startRequest
        /// Trailers: the request ends (their fields are not passed on).
        case endRequest
        /// Nothing (the response already ended, or a second block after the end).
        case ignore
    }

    /// What to do with a DATA frame.
    enum DataAction: Hashable, Sendable {
        /// Pass the bytes to the exchange; `thenEnd`: the request ends with them.
        case body(thenEnd: Bool)
        /// Tunnel bytes (a CONNECT stream, RFC 9113 §8.5): to the relay, or kept for it while the
        /// tunnel is being opened; `thenEnd`: the client half-closed the tunnel.
        case tunnel(thenEnd: Bool)
        /// Nothing: no exchange takes them any more.
        case ignore
    }

    /// What to do when the response ended.
    enum EndAction: Hashable, Sendable {
        /// Nothing more: the request had ended too, so the stream closes by itself.
        case none
        /// The client is still sending a body no one reads: ask it to stop (RST_STREAM NO_ERROR,
        /// RFC 9113 §8.1).
        case resetNoError
    }

    /// Where a CONNECT stream's tunnel is (RFC 9113 §8.5).
    enum Tunnel: Hashable, Sendable {
        /// The tunnel is being opened: reads are held (the client's bytes wait in its window).
        case opening
        /// Bytes flow: reads go as the relay wants them.
        case relaying
    }

    private(set) var phase = Phase.awaitingHeaders
    /// Set for a CONNECT stream.
    private(set) var tunnel: Tunnel?
    private(set) var requestEnded = false
    private(set) var responseStarted = false
    /// Body pieces given to the exchange and not yet taken by the session.
    private(set) var piecesWaiting = 0
    /// ``HTTP2StreamHandler/holdReads()`` calls not yet undone.
    private(set) var holds = 0
    /// A read was asked for while reads were held: pass it on when they are not.
    private(set) var readPending = false

    /// Whether the stream still answers its request (not ended, not closed).
    var isServing: Bool { phase == .serving }

    /// Whether the proxy waits for the client's next request body bytes: the request has not
    /// ended, and nothing on the proxy's side holds reads (then the client is not the one late).
    /// While it waits, the body's idle timeout runs.
    /// A tunnel's client is never late: its silence is the tunnel's business.
    var waitsForClientBody: Bool {
        phase == .serving && tunnel == nil && !requestEnded && piecesWaiting == 0 && holds == 0
    }

    mutating func headersReceived(endStream: Bool) -> HeadersAction {
        switch phase {
        case .awaitingHeaders:
            phase = .serving
            requestEnded = endStream
            return .startRequest
        case .serving where !requestEnded:
            // A second block is the trailers, which end the stream (RFC 9113 §8.1).
            requestEnded = true
            return .endRequest
        case .serving, .done, .closed:
            if phase == .done { requestEnded = requestEnded || endStream }
            return .ignore
        }
    }

    mutating func dataReceived(endStream: Bool) -> DataAction {
        guard phase == .serving, !requestEnded else {
            if endStream { requestEnded = true }
            return .ignore
        }
        if endStream { requestEnded = true }
        return tunnel == nil ? .body(thenEnd: endStream) : .tunnel(thenEnd: endStream)
    }

    /// The stream's request is a CONNECT: its tunnel is being opened.
    mutating func tunnelRequested() {
        guard phase == .serving else { return }
        tunnel = .opening
    }

    /// The tunnel is open and its relay runs; a read held back goes through once the relay
    /// wants bytes (``relayMayRead(relayWantsBytes:)``).
    mutating func relayStarted() {
        guard phase == .serving, tunnel != nil else { return }
        tunnel = .relaying
    }

    /// A read was asked for: true when it goes through now (`relayWantsBytes`: a tunnel's relay
    /// takes the client's next bytes; a relay still writing the last ones does not, and the
    /// client's window stays closed meanwhile).
    mutating func readRequested(relayWantsBytes: Bool = true) -> Bool {
        if readsHeld || (phase == .serving && tunnel == .relaying && !relayWantsBytes) {
            readPending = true
            return false
        }
        return true
    }

    /// The relay may take bytes again: true when a read held back goes through now.
    mutating func relayMayRead(relayWantsBytes: Bool) -> Bool {
        readsMayResume(relayWantsBytes: relayWantsBytes)
    }

    private var readsHeld: Bool { phase == .serving && (piecesWaiting > 0 || holds > 0 || tunnel == .opening) }

    /// Reads were let go: true when a read held back goes through now.
    private mutating func readsMayResume(relayWantsBytes: Bool = true) -> Bool {
        guard readPending, !readsHeld, tunnel != .relaying || relayWantsBytes || phase != .serving else { return false }
        readPending = false
        return true
    }

    mutating func bodyPieceSent() { piecesWaiting += 1 }

    mutating func bodyPieceTaken() -> Bool {
        piecesWaiting = max(0, piecesWaiting - 1)
        return readsMayResume()
    }

    mutating func readsWereHeld() { holds += 1 }

    mutating func readsWereReleased() -> Bool {
        holds = max(0, holds - 1)
        return readsMayResume()
    }

    mutating func responseHeadSent() { responseStarted = true }

    /// The response ended (complete or cut short).
    mutating func responseEnded() -> EndAction {
        guard phase == .serving else { return .none }
        phase = .done
        piecesWaiting = 0
        holds = 0
        return requestEnded ? .none : .resetNoError
    }

    /// The stream channel closed: true when the exchange must be told (it was still serving).
    mutating func closed() -> Bool {
        let wasServing = phase == .serving
        phase = .closed
        return wasServing
    }
}
