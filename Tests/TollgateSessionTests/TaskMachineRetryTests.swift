import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateSession

/// ``TaskMachine``'s response stages event by event: a redirect, 401 or 407 held for a retry, the
/// delegate's decision, and late answers refused by the machine itself.
@Suite("Task state machine: retries and the response decision")
struct TaskMachineRetryTests {
    typealias Machine = TaskMachine<String, String>

    static let redirect = HTTPResponseHead(status: 302)
    static let unauthorized = HTTPResponseHead(status: 401)
    static let target = Request(url: HTTPURL(string: "http://b.test/next")!)
    static let again = Request(url: HTTPURL(string: "http://a.test/")!)

    /// A retry step as text: "follow <url>", "wait" or "drop".
    static func described(_ step: Machine.RetryStep) -> String {
        switch step {
        case .follow(let request): "follow \(request.url.absoluteString)"
        case .wait: "wait"
        case .drop: "drop"
        }
    }

    static func exchanging() -> Machine {
        var machine = Machine()
        _ = machine.sendingRequest()
        machine.leasing(1)
        machine.exchangeStarted(on: "c1")
        return machine
    }

    @Test("A redirect answered before its end keeps no body after the answer and is followed at the end, counted")
    func answeredBeforeTheEnd() {
        var machine = Self.exchanging()
        let hold = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        #expect(machine.holdsRetry)
        #expect(machine.retryBodyReceived(ByteBuffer(string: "moved")) == true)
        #expect(machine.pendingRetry(hold)?.body.count == 1)
        #expect(Self.described(machine.followRetry(hold, with: Self.target)) == "wait")
        #expect(machine.pendingRetry(hold)?.body.isEmpty == true)  // it will not be delivered
        #expect(machine.retryBodyReceived(ByteBuffer(string: "!")) == true)
        #expect(machine.pendingRetry(hold)?.body.isEmpty == true)
        #expect(machine.pendingRetry(hold)?.bodyBytes == 6)
        #expect(machine.exchangeEnded() == "c1")
        #expect(Self.described(machine.retryEnded()) == "follow http://b.test/next")
        #expect(machine.redirectCount == 1)
        #expect(!machine.holdsRetry)
        #expect(machine.mayDeliver)
    }

    @Test("A redirect whose end comes first is followed when the answer comes")
    func endedBeforeTheAnswer() {
        var machine = Self.exchanging()
        let hold = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        let ended = machine.retryEnded()
        #expect(Self.described(ended) == "wait")
        #expect(machine.pendingRetry(hold)?.ended == true)
        #expect(Self.described(machine.followRetry(hold, with: Self.target)) == "follow http://b.test/next")
        #expect(machine.redirectCount == 1)
    }

    @Test("A 407 held with its retry known is followed at its end; 401 and 407 retries are not redirects")
    func authenticationRetriesAreNotCounted() {
        var machine = Self.exchanging()
        _ = machine.holdForRetry(
            .proxyAuthentication,
            head: HTTPResponseHead(status: 407),
            newRequest: Self.again,
            follow: Self.again
        )
        #expect(machine.retryBodyReceived(ByteBuffer(string: "denied")) == true)
        #expect(Self.described(machine.retryEnded()) == "follow http://a.test/")
        let hold = machine.holdForRetry(.authentication, head: Self.unauthorized, newRequest: Self.again)
        #expect(Self.described(machine.followRetry(hold, with: Self.again)) == "wait")
        #expect(Self.described(machine.retryEnded()) == "follow http://a.test/")
        #expect(machine.redirectCount == 0)
    }

    @Test("A held response delivered after all hands back its body and end; later answers for it are dropped")
    func deliveredAfterAll() {
        var machine = Self.exchanging()
        let hold = machine.holdForRetry(.authentication, head: Self.unauthorized, newRequest: Self.again)
        _ = machine.retryBodyReceived(ByteBuffer(string: "a"))
        _ = machine.retryBodyReceived(ByteBuffer(string: "b"))
        let ended = machine.retryEnded()
        #expect(Self.described(ended) == "wait")
        let pending = machine.deliverRetry(hold)
        #expect(pending?.body == [ByteBuffer(string: "a"), ByteBuffer(string: "b")])
        #expect(pending?.ended == true)
        #expect(pending?.head.status == 401)
        #expect(!machine.holdsRetry)
        #expect(Self.described(machine.followRetry(hold, with: Self.again)) == "drop")
        #expect(machine.deliverRetry(hold) == nil)
        #expect(machine.pendingRetry(hold) == nil)
        #expect(machine.retryBodyReceived(ByteBuffer(string: "c")) == false)  // the response is the task's again
    }

    @Test("An answer for an earlier hold, or one after the task completed, is dropped by the machine")
    func lateAnswers() {
        var machine = Self.exchanging()
        let first = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        _ = machine.deliverRetry(first)
        let second = machine.holdForRetry(.authentication, head: Self.unauthorized, newRequest: Self.again)
        #expect(Self.described(machine.followRetry(first, with: Self.target)) == "drop")
        #expect(machine.pendingRetry(first) == nil)
        #expect(machine.pendingRetry(second) != nil)
        _ = machine.complete()
        #expect(machine.pendingRetry(second) == nil)
        #expect(Self.described(machine.followRetry(second, with: Self.again)) == "drop")
        #expect(Self.described(machine.retryEnded()) == "drop")
    }

    @Test("Without a hold, the body and the end are the task's")
    func noHold() {
        var machine = Self.exchanging()
        #expect(machine.retryBodyReceived(ByteBuffer(string: "x")) == false)
        #expect(Self.described(machine.retryEnded()) == "drop")
    }

    @Test("A 401 with no challenge to raise is delivered as it is")
    func retryNotNeeded() {
        var machine = Self.exchanging()
        let hold = machine.holdForRetry(.authentication, head: Self.unauthorized, newRequest: Self.again)
        machine.retryNotNeeded()
        #expect(!machine.holdsRetry)
        #expect(machine.pendingRetry(hold) == nil)
    }

    @Test("Redirects may be followed until the count reaches the maximum")
    func redirectLimit() {
        var machine = Self.exchanging()
        #expect(machine.mayRedirect(maximum: 1))
        let hold = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        _ = machine.followRetry(hold, with: Self.target)
        _ = machine.retryEnded()
        #expect(!machine.mayRedirect(maximum: 1))
        #expect(machine.mayRedirect(maximum: 2))
    }

    @Test("A decision answer is taken once, only while one is awaited; a held response delivered is then asked about")
    func decisionStage() {
        var machine = Self.exchanging()
        #expect(machine.decisionArrived() == false)
        let hold = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        #expect(machine.mayDeliver)  // a hold keeps the body itself; the gate is for the task's pieces
        _ = machine.deliverRetry(hold)
        machine.askedForDecision()
        #expect(machine.awaitingDecision)
        #expect(!machine.mayDeliver)
        #expect(machine.decisionArrived() == true)
        #expect(machine.decisionArrived() == false)
        machine.askedForDecision()
        _ = machine.complete()
        #expect(machine.decisionArrived() == false)
        #expect(!machine.awaitingDecision)
    }

    @Test("A stored body's read is the task's only while it serves the body")
    func storedReads() {
        var machine = Machine()
        #expect(machine.storedReadArrived() == false)  // idle: nothing is served
        machine.servingStoredBody()
        #expect(machine.storedReadArrived() == true)
        _ = machine.abandon()
        #expect(machine.storedReadArrived() == false)
        machine.servingStoredBody()
        _ = machine.complete()
        #expect(machine.storedReadArrived() == false)
    }

    @Test(
        "Waiting for another task's fetch ends once: by the leader's end or the timer, whichever is first; a cancel stops the timer"
    )
    func leaderWait() {
        var machine = Machine()
        machine.waitForLeader("wait")
        #expect(machine.leaderWaitEnded() == true)
        #expect(machine.leaderWaitEnded() == false)  // the timer after the leader's end: dropped
        machine.waitForLeader("wait")
        #expect(machine.abandon() == .cancelTimer("wait"))
        #expect(machine.leaderWaitEnded() == false)
        machine.waitForLeader("wait")
        _ = machine.complete()
        #expect(machine.leaderWaitEnded() == false)
    }

    @Test(
        "A request is sent once more after a lost kept-alive connection only once, and again after a retry is followed"
    )
    func resendOnce() {
        var machine = Self.exchanging()
        let lost = Machine.LostExchange.connectionLost(reusedConnection: true, idempotent: true)
        #expect(machine.exchangeLost(lost) == .resend)
        #expect(machine.exchangeLost(lost) == .fail)
        let hold = machine.holdForRetry(.redirect, head: Self.redirect, newRequest: Self.target)
        _ = machine.retryEnded()
        _ = machine.followRetry(hold, with: Self.target)
        #expect(machine.exchangeLost(lost) == .resend)  // the redirect's request is a new one
    }
}
