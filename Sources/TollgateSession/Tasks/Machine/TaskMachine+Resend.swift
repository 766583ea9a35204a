/// The rule for sending a request again after its exchange was lost before any response came:
/// an event saying how it was lost, an action saying whether to resend or fail.
extension TaskMachine {
    /// How an exchange was lost before its response began (one lost after is never resent: the
    /// delegate has seen part of it).
    enum LostExchange: Equatable {
        /// The server provably did not process the request (RFC 9113 §8.7): its HTTP/2 stream was
        /// refused (REFUSED_STREAM, or above the last stream id of a GOAWAY), or never opened.
        case notProcessed
        /// The connection was lost; the server may have processed the request.
        /// `reusedConnection`: it had carried an exchange before (a kept-alive connection the
        /// server closed as this one started, the usual race). `anotherTarget`: it went to one
        /// of several `connect-to` targets, and another may answer (nginx's `proxy_next_upstream
        /// error` for idempotent requests).
        case connectionLost(reusedConnection: Bool, idempotent: Bool, anotherTarget: Bool = false)
    }

    /// What the runner does about a lost exchange.
    enum ResendStep: Equatable {
        /// Send the request again (its body read again, a stream asked of the delegate anew) on
        /// the connection the pool gives: never the one that refused it (it takes no new stream
        /// after a refusal, `ConnectionPool.releaseRefused`), so a new one, or another stream of a
        /// connection that still takes new streams.
        case resend
        /// The task fails with the exchange's error.
        case fail
    }

    /// At most this many requests of one task are sent again as not processed; then the refusal
    /// is the task's error. Enough for a server that ends every connection after a few streams
    /// (nginx's `keepalive_requests`) while many tasks share the connection; a bound so that a
    /// server refusing everything does not keep a task busy forever.
    static var maximumUnprocessedResends: Int { 5 }

    /// The exchange was lost before its response began (the runner already released its
    /// connection). A request the server did not process is sent again whatever its method and
    /// whether or not the connection was reused, up to ``maximumUnprocessedResends`` times per
    /// task. Otherwise the HTTP/1.1 rule: an idempotent request on a reused connection — or on a
    /// new one to a backend that has others beside it —, once per request.
    mutating func exchangeLost(_ lost: LostExchange) -> ResendStep {
        guard !isCompleted else { return .fail }
        switch lost {
        case .notProcessed:
            guard unprocessedResends < Self.maximumUnprocessedResends else { return .fail }
            unprocessedResends += 1
            return .resend
        case .connectionLost(let reused, let idempotent, let anotherTarget):
            guard reused || anotherTarget, idempotent, !resentCurrentRequest else { return .fail }
            resentCurrentRequest = true
            return .resend
        }
    }
}
