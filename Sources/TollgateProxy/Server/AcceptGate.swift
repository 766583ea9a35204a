/// How many connections a listener with `listen[].max-connections` serves, and what it does at
/// the limit: a pure machine, run by ``AcceptGateHandler`` on the listening channel's event loop.
///
/// At the limit the listener stops accepting, so new connections wait in the kernel's listen
/// queue (HAProxy's `maxconn`); the few accepted in the same read before it stopped wait here,
/// accepted but not served, and are served first as connections close. `Waiting` is what a
/// waiting connection is (a channel, for the handler).
struct AcceptGate<Waiting> {
    /// What the handler does next.
    enum Action {
        /// Serve this connection (pass it on to be registered).
        case serve(Waiting)
        /// Stop accepting (turn reading off on the listening socket).
        case pause
        /// Accept again.
        case resume
        /// Close these connections, never served (the listener closed).
        case drop([Waiting])
    }

    /// The most connections served at once.
    let maximum: Int
    /// Connections served and not yet closed.
    private(set) var served = 0
    /// Connections accepted past the limit, in order.
    private(set) var waiting: [Waiting] = []
    /// Whether accepting is stopped.
    private(set) var paused = false

    init(maximum: Int) {
        precondition(maximum > 0)
        self.maximum = maximum
    }

    /// A connection was accepted.
    mutating func accepted(_ connection: Waiting) -> [Action] {
        var actions: [Action] = []
        if served < maximum {
            served += 1
            actions.append(.serve(connection))
        } else {
            waiting.append(connection)
        }
        // At the limit, every time: something else may have turned accepting on (the accept
        // failure backoff's pause ending).
        if served >= maximum {
            paused = true
            actions.append(.pause)
        }
        return actions
    }

    /// A served connection closed: the first waiting one takes its place, or, with none
    /// waiting, accepting starts again.
    mutating func closed() -> [Action] {
        served = max(0, served - 1)
        if !waiting.isEmpty {
            served += 1
            return [.serve(waiting.removeFirst())]
        }
        if paused, served < maximum {
            paused = false
            return [.resume]
        }
        return []
    }

    /// The listener closed: the waiting connections are dropped.
    mutating func listenerClosed() -> [Action] {
        guard !waiting.isEmpty else { return [] }
        defer { waiting = [] }
        return [.drop(waiting)]
    }
}
