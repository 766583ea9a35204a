import TollgateHTTP

/// What an HTTP/1.1 client connection is doing and what it does next: which request is being
/// served, whether the connection closes after its response, when the next pipelined request
/// starts, and whether the client may be read. Events in, actions out; no I/O
/// (``ClientConnectionHandler`` performs the actions).
///
/// One request at a time: a pipelined request waits in the decoder until the response to the
/// one before it has ended, which keeps responses in request order.
struct ClientConnectionMachine {
    /// Bytes of pipelined requests read ahead at most while a response is in progress.
    static let readAheadLimit = 64 * 1024

    /// The phase of the connection.
    enum State {
        /// Waiting for a request (none begun, or the last one fully served).
        case waiting
        /// A request is being served.
        case serving(Cycle)
        /// After CONNECT or an upgrade: the client's bytes go to a relay, raw.
        case relaying
        /// Transient, while a cycle is changed in place (no copy of its request).
        case modifying
    }

    /// One request and its response.
    struct Cycle {
        let request: ClientRequestHead
        /// The request's body has been read to its end.
        var requestEnded = false
        /// The response to `request` has ended (or was given by the connection itself).
        var responseDone = false
    }

    /// What to do once a response or a request ended.
    enum CycleAction: Equatable {
        /// Nothing yet (the other half is still going).
        case none
        /// Close once what was written has gone out.
        case closeAfterFlush
        /// The request and its response are done: serve the next request.
        case serveNextRequest
    }

    /// Who answers a request that failed while it was being read.
    enum FailureAction: Equatable {
        /// The exchange serving it (it may have begun a response).
        case tellExchange
        /// The connection itself, with the error's answer.
        case answerItself
    }

    private(set) var state = State.waiting
    /// The connection is closing: nothing more is read or started.
    private(set) var isClosing = false
    /// The channel is active, as its events said.
    private(set) var channelIsActive = false
    /// The server is shutting down: the connection closes after the current response.
    private(set) var quiescing = false
    /// The client half-closed its side (EOF).
    private(set) var clientInputClosed = false
    /// The current (or last) response asked for the connection to close after it.
    private var closeAfterResponse = false
    /// A read was asked for while reading was not allowed.
    private var readPending = false
    /// Request body pieces handed to the session and not yet taken.
    private(set) var piecesInFlight = 0
    /// Holds on reading (an exchange deciding where the request goes).
    private(set) var readHolds = 0

    // MARK: what the connection is serving

    /// The request being served (nil while waiting for one, and while relaying).
    var request: ClientRequestHead? {
        if case .serving(let cycle) = state { return cycle.request }
        return nil
    }

    /// Whether a request is being served.
    var isServing: Bool {
        if case .serving = state { return true }
        return false
    }

    /// Whether the client's bytes go to a relay.
    var isRelaying: Bool {
        if case .relaying = state { return true }
        return false
    }

    /// Whether the current request's body has been read to its end.
    var requestEnded: Bool {
        if case .serving(let cycle) = state { return cycle.requestEnded }
        return false
    }

    /// Whether the current response has ended.
    var responseDone: Bool {
        if case .serving(let cycle) = state { return cycle.responseDone }
        return false
    }

    /// Whether the client is still there to be answered.
    var isActive: Bool { !isClosing && channelIsActive }

    /// The minor HTTP version responses are written in (the request's).
    var minorVersion: Int {
        if case .serving(let cycle) = state { return cycle.request.minorVersion }
        return 1
    }

    /// Whether the connection will close after the current response.
    var willClose: Bool {
        guard case .serving(let cycle) = state else { return true }
        let request = cycle.request
        // After CONNECT or an upgrade request the decoder reads no further request.
        return closeAfterResponse || quiescing || !request.wantsKeepAlive || request.isConnect || request.isUpgrade
    }

    /// Whether part of the request's body was not read (it then cannot be followed by another).
    var hasUnreadBody: Bool {
        guard case .serving(let cycle) = state else { return false }
        return !cycle.requestEnded && cycle.request.hasBody
    }

    /// Whether the connection waits for the client's next request body bytes (its body timeout
    /// runs): nobody holds reads and the response has not ended.
    var waitsForRequestBody: Bool {
        guard case .serving(let cycle) = state else { return false }
        return !cycle.requestEnded && piecesInFlight == 0 && readHolds == 0 && !cycle.responseDone
    }

    // MARK: channel events

    mutating func channelActivated() {
        channelIsActive = true
    }

    mutating func channelDeactivated() {
        channelIsActive = false
    }

    /// The channel went away: everything stops.
    mutating func channelClosed() {
        isClosing = true
        channelIsActive = false
    }

    /// The server asks connections to finish; returns whether to close now (nothing is served).
    mutating func quiesceRequested() -> Bool {
        quiescing = true
        return !isServing && !isRelaying
    }

    /// The client half-closed; returns whether to close now (nothing is served).
    mutating func clientInputEnded() -> Bool {
        clientInputClosed = true
        return !isServing && !isRelaying
    }

    /// The connection starts closing (at once, or after a flush).
    mutating func closeStarted() {
        isClosing = true
    }

    // MARK: the request/response cycle

    /// A request head arrived: it is served now.
    mutating func requestHeadReceived(_ head: ClientRequestHead) {
        state = .serving(Cycle(request: head))
        closeAfterResponse = false
    }

    /// The request's body ended.
    mutating func requestBodyEnded(bufferedBytes: Int) -> CycleAction {
        guard case .serving(var cycle) = state else { preconditionFailure("Invalid state: \(state)") }
        state = .modifying
        cycle.requestEnded = true
        state = .serving(cycle)
        return cycle.responseDone ? cycleEnded(bufferedBytes: bufferedBytes) : .none
    }

    /// The request could not be read further: who answers. The connection closes after.
    mutating func requestFailed(exchangeRunning: Bool) -> FailureAction {
        if exchangeRunning, case .serving(let cycle) = state, !cycle.responseDone { return .tellExchange }
        return .answerItself
    }

    /// After a failed request the connection closes, whoever answered.
    mutating func closeAfterThisResponse() {
        closeAfterResponse = true
    }

    /// A response head (or an answer of the connection's own) is written; `close` asks for the
    /// connection to close after it.
    mutating func responseStarted(close: Bool) {
        closeAfterResponse = closeAfterResponse || close
    }

    /// The response ended: the next request, or closing.
    mutating func responseEnded(bufferedBytes: Int) -> CycleAction {
        guard case .serving(var cycle) = state else { return willClose ? .closeAfterFlush : .none }
        state = .modifying
        cycle.responseDone = true
        state = .serving(cycle)
        if willClose || hasUnreadBody { return .closeAfterFlush }
        return cycle.requestEnded ? cycleEnded(bufferedBytes: bufferedBytes) : .none
    }

    /// The response was cut short: the connection closes at once.
    mutating func responseAborted() {
        isClosing = true
        if case .serving(var cycle) = state {
            state = .modifying
            cycle.responseDone = true
            state = .serving(cycle)
        }
    }

    /// Request and response are both complete: wait for the next request.
    private mutating func cycleEnded(bufferedBytes: Int) -> CycleAction {
        state = .waiting
        if clientInputClosed, bufferedBytes == 0 { return .closeAfterFlush }
        return .serveNextRequest
    }

    /// The connection became a relay (a tunnel, an upgrade).
    mutating func relayStarted() {
        state = .relaying
    }

    /// An intercepted CONNECT: the connection starts over with the requests inside the TLS.
    mutating func interceptionStarted() {
        state = .waiting
        closeAfterResponse = false
    }

    // MARK: reading

    /// Whether the client may be read now; `relayWantsBytes` is the relay's say while relaying.
    func mayRead(bufferedBytes: Int, decoderStopped: Bool, relayWantsBytes: Bool) -> Bool {
        if isClosing { return false }
        if isRelaying { return relayWantsBytes }
        if piecesInFlight > 0 || readHolds > 0 || decoderStopped { return false }
        return bufferedBytes < Self.readAheadLimit
    }

    /// The channel asks to read: returns whether to read now (else the read waits).
    mutating func readRequested(bufferedBytes: Int, decoderStopped: Bool, relayWantsBytes: Bool) -> Bool {
        if mayRead(bufferedBytes: bufferedBytes, decoderStopped: decoderStopped, relayWantsBytes: relayWantsBytes) {
            return true
        }
        readPending = true
        return false
    }

    /// Something that held reading may have let go: returns whether to read the waiting read now.
    mutating func readsMayResume(bufferedBytes: Int, decoderStopped: Bool, relayWantsBytes: Bool) -> Bool {
        guard readPending, mayRead(bufferedBytes: bufferedBytes, decoderStopped: decoderStopped, relayWantsBytes: relayWantsBytes) else {
            return false
        }
        readPending = false
        return true
    }

    /// A request body piece went to the session; reads wait until it is taken.
    mutating func bodyPieceSent() {
        piecesInFlight += 1
    }

    /// The session took a body piece.
    mutating func bodyPieceTaken() {
        piecesInFlight -= 1
    }

    /// An exchange holds reads.
    mutating func readsHeld() {
        readHolds += 1
    }

    /// An exchange let go of one hold.
    mutating func readsReleased() {
        readHolds -= 1
    }
}
