import NIOCore
import TollgateLoop
import TollgatePolicy

/// The four timeouts (``ClientTimeouts``) as deadlines watched through the loop's
/// `LoopDeadlines` (no NIO timer per connection or request): told when the earliest registered
/// one passes, the handler acts on those that really passed and registers the rest.
extension ClientConnectionHandler {
    /// Sets the deadlines for what the connection waits for now and registers the earliest.
    func updateTimers() {
        guard let context, !machine.isClosing, relay == nil, machine.channelIsActive else {
            cancelTimers()
            return
        }
        let clock = self.clock
        timeouts.update(
            waitingForRequest: !machine.isServing,
            insideHead: decoder.isInsideHead,
            waitsForRequestBody: machine.waitsForRequestBody,
            now: { clock.now }
        )
        watchDeadlines(on: context.eventLoop)
    }

    /// Registers the earliest deadline with the loop (a later one than registered changes nothing).
    private func watchDeadlines(on eventLoop: any EventLoop) {
        if let earliest = timeouts.earliest { LoopDeadlines.of(eventLoop).watch(self, until: earliest) }
    }

    /// A registered deadline passed: answer or close for the ones that really did, watch the rest.
    package func deadlinePassed() {
        guard let context, !machine.isClosing else { return }
        let expiry = timeouts.expire(
            now: clock.now,
            waitingForRequest: !machine.isServing,
            requestBodyOpen: machine.isServing && !machine.requestEnded,
            insideHead: decoder.isInsideHead,
            clientStalled: !context.channel.isWritable
        )
        switch expiry {
        case .headTimedOut:
            let timeout = limits.headerReadTimeout
            answerItself(ClientRequestError.timedOut("the request head did not arrive within \(timeout)").answer, close: true)
        case .bodyTimedOut:
            handle(.failure(.timedOut("no request body bytes for \(limits.clientIdleTimeout)")))
        case .idleTimedOut:
            closeNow()
        case .sendTimedOut:
            exchange?.clientSendTimedOut()
            closeNow()
        case .watch(let earliest):
            if let earliest { LoopDeadlines.of(context.eventLoop).watch(self, until: earliest) }
        }
    }

    /// The client's socket filled or drained: the send timeout starts or stops (not in a relay,
    /// whose idle timeouts count bytes either way).
    func noteClientWritability(_ writable: Bool) {
        guard let context, !machine.isClosing, relay == nil, machine.channelIsActive else { return }
        let clock = self.clock
        timeouts.clientWritabilityChanged(writable, now: { clock.now })
        if !writable { watchDeadlines(on: context.eventLoop) }
    }

    /// Stops every deadline and leaves the loop's list at once: a closed connection is not kept
    /// until its old deadline.
    func cancelTimers() {
        timeouts.stop()
        if deadlineSlot.isWatched, let loop = context?.eventLoop { LoopDeadlines.of(loop).unwatch(self) }
    }
}
