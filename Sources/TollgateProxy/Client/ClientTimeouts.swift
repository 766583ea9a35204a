import NIOCore

/// The four timeouts of a client connection as deadlines, with no timer of their own: the
/// handler registers ``earliest`` with the loop's `LoopDeadlines` and, told that it passed,
/// asks ``expire(now:waitingForRequest:requestBodyOpen:insideHead:clientStalled:)`` what ran out.
///
/// - idle: a connection waiting for a request with no byte of one for `client-idle-timeout` is closed;
/// - head: a client that started a head and did not finish it within `header-read-timeout` gets
///   408 and is closed (slowloris);
/// - body: a request body with no byte for `client-idle-timeout` gets the same;
/// - send: a client whose socket stays full — taking too little of a response for the proxy's
///   writes to go on — for `client-send-timeout` is closed (nginx's `send_timeout`: a client
///   that stops reading holds its connection, and the upstream connection feeding it, no longer).
///
/// A deadline cleared before it passed (a request came) just finds nothing to do.
struct ClientTimeouts {
    /// What ran out.
    enum Expiry: Equatable {
        /// The request head did not arrive in time: answer 408 and close.
        case headTimedOut
        /// No request body bytes came in time: the request fails with 408.
        case bodyTimedOut
        /// The connection was idle too long: close it.
        case idleTimedOut
        /// The client took no response bytes for too long: close it.
        case sendTimedOut
        /// Nothing that matters yet: watch this deadline (nil: none left).
        case watch(NIODeadline?)
    }

    let headerReadTimeout: TimeAmount
    let clientIdleTimeout: TimeAmount
    let clientSendTimeout: TimeAmount

    /// When the connection, idle since it last finished a request, is closed; nil while a request
    /// is being read or served.
    private(set) var idleDeadline: NIODeadline?
    /// When a request head begun must be complete.
    private(set) var headDeadline: NIODeadline?
    /// When the next piece of a request body must have arrived.
    private(set) var bodyDeadline: NIODeadline?
    /// When a client whose socket is full is given up on.
    private(set) var sendDeadline: NIODeadline?

    init(headerReadTimeout: TimeAmount, clientIdleTimeout: TimeAmount, clientSendTimeout: TimeAmount) {
        self.headerReadTimeout = headerReadTimeout
        self.clientIdleTimeout = clientIdleTimeout
        self.clientSendTimeout = clientSendTimeout
    }

    /// The earliest deadline set.
    var earliest: NIODeadline? {
        var earliest = idleDeadline
        if let head = headDeadline, earliest.map({ head < $0 }) ?? true { earliest = head }
        if let body = bodyDeadline, earliest.map({ body < $0 }) ?? true { earliest = body }
        if let send = sendDeadline, earliest.map({ send < $0 }) ?? true { earliest = send }
        return earliest
    }

    /// Sets the deadlines for what the connection waits for now. `now` is read only when a
    /// deadline starts.
    mutating func update(waitingForRequest: Bool, insideHead: Bool, waitsForRequestBody: Bool, now: () -> NIODeadline) {
        if waitingForRequest {
            bodyDeadline = nil
            if insideHead {
                idleDeadline = nil
                if headDeadline == nil { headDeadline = now() + headerReadTimeout }
            } else if headDeadline == nil, idleDeadline == nil {
                // Idle since now: closed at the deadline unless a request comes first.
                idleDeadline = now() + clientIdleTimeout
            }
        } else {
            idleDeadline = nil
            headDeadline = nil
            if !waitsForRequestBody {
                bodyDeadline = nil
            } else if bodyDeadline == nil {
                bodyDeadline = now() + clientIdleTimeout
            }
        }
    }

    /// Request body bytes arrived (or went to the session): the body timeout starts again later.
    mutating func requestBodyProgressed() {
        bodyDeadline = nil
    }

    /// The client's socket stopped taking bytes (the send timeout starts, unless it runs
    /// already) or took enough to be written to again (it stops).
    mutating func clientWritabilityChanged(_ writable: Bool, now: () -> NIODeadline) {
        if writable {
            sendDeadline = nil
        } else if sendDeadline == nil {
            sendDeadline = now() + clientSendTimeout
        }
    }

    /// The connection stops (or becomes a relay, which has idle timeouts of its own): no deadline runs.
    mutating func stop() {
        idleDeadline = nil
        headDeadline = nil
        bodyDeadline = nil
        sendDeadline = nil
    }

    /// A registered deadline passed: what ran out at `now`, given what the connection does.
    /// `clientStalled`: the client's socket is full now.
    mutating func expire(now: NIODeadline, waitingForRequest: Bool, requestBodyOpen: Bool, insideHead: Bool, clientStalled: Bool) -> Expiry {
        if let deadline = sendDeadline, deadline <= now {
            sendDeadline = nil
            if clientStalled { return .sendTimedOut }
        }
        if let deadline = headDeadline, deadline <= now {
            headDeadline = nil
            if waitingForRequest { return .headTimedOut }
        }
        if let deadline = bodyDeadline, deadline <= now {
            bodyDeadline = nil
            if requestBodyOpen { return .bodyTimedOut }
        }
        if let deadline = idleDeadline, deadline <= now {
            idleDeadline = nil
            if waitingForRequest, !insideHead { return .idleTimedOut }
        }
        return .watch(earliest)
    }
}
