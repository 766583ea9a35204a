import NIOCore
import TollgateHTTP

/// Where a running task's work is and what may be delivered to its delegate, as a pure state
/// machine: events in (a lease, a response's end, a body piece, a failure, suspend, a delegate's
/// answer, a timer), actions out; no I/O here. The `SessionTask` extensions run the actions
/// (release or close a connection, deliver a piece, finish, fail).
///
/// Two things decide what happens to an event, and both live here:
/// - **The phase** carries its own data: the begin-date timer, the lease, the connection of the
///   exchange. Each exchange has a number; an event of an earlier exchange (one that ended, was
///   abandoned, or belongs to a task that completed) is rejected by ``accepts(exchange:)``, and a
///   lease or timer that fires after the task moved on is turned down by its event.
/// - **The response's stage** (``Stage``): delivered as it comes, awaiting the delegate's decision
///   on it, or held for a retry (a redirect, 401 or 407, with its ``PendingRetry`` data: the
///   head, the body kept while it may still be delivered, the request to follow, whether it
///   ended). An answer for a hold that is gone (answered, or the task completed) is refused by its
///   event (``TaskMachine+Retry.swift``).
/// - **The delivery gate** (``mayDeliver``): a body piece, the response's end or a failure goes to
///   the delegate only while the task is not suspended, no response decision is awaited, and no
///   earlier piece is held; otherwise it is held, and released in order by ``nextHeld()``.
///
/// The outer lifecycle (suspended → running → canceling → completed) is ``TaskLifecycle``: it is
/// read from any thread under the task's lock, while this machine is touched only on the task's
/// event loop. `SessionTask.syncSuspension()` feeds the lifecycle's state into ``suspend()`` and
/// ``resume()``.
///
/// Generic over the connection and timer types so that tests drive it with plain values; the
/// task stores one `TaskMachine<OriginConnection, Scheduled<Void>>` inline (no allocation).
struct TaskMachine<Connection, Timer> {
    /// Where the task's work is.
    enum Phase {
        /// Not started, or between steps (a delegate's answer, a cache commit, another task's fetch).
        case idle
        /// Waiting for `earliestBeginDate`.
        case waitingForBeginDate(Timer)
        /// Asked the pool for a connection (the lease's id; 0 for an idle connection taken at once).
        case leasing(Int)
        /// An exchange runs on this connection.
        case exchanging(Connection)
        /// A stored body is being sent (from a file, paced by the task).
        case servingStored
        /// Waiting before trying to connect again (`waitsForConnectivity`).
        case waitingForConnectivity(Timer)
        /// Waiting for another task's fetch of the same response (collapsed forwarding); the
        /// timer stops waiting.
        case waitingForLeader(Timer)
        /// Completed: every later event is ignored.
        case completed
    }

    /// What the current response waits for before it goes on.
    enum Stage {
        /// Delivered as it comes (through the gate).
        case delivering
        /// The delegate was asked about it (`didReceiveResponse`) and has not answered: nothing is
        /// delivered meanwhile.
        case awaitingDecision
        /// A redirect, 401 or 407 held instead of delivered, until the answer (follow it, or
        /// deliver it after all) and its end are both in.
        case retrying(PendingRetry)
    }

    /// What was held back when the gate closed, besides body pieces.
    private enum HeldEnd {
        /// The response ended; `keptReusable`: the connection stays the task's until the pieces
        /// are released (the delegate may still answer becomeStream), and may then be reused.
        case end(keptReusable: Bool?)
        /// The exchange failed while the task was suspended.
        case failure(SessionError)
    }

    private(set) var phase: Phase = .idle
    /// The number of the current exchange: moved on whenever one starts, ends or is abandoned.
    private(set) var exchange = 0
    /// The task is suspended: nothing is delivered and nothing is read.
    private(set) var isSuspended = false
    /// What the current response waits for.
    private(set) var stage: Stage = .delivering
    /// Redirects followed (retries after a 401 or 407 are not counted).
    private(set) var redirectCount = 0
    /// The id of the last retry hold (an answer carrying an older one is late).
    private var lastRetryID = 0
    /// The current request was sent once more after a kept-alive connection was lost.
    var resentCurrentRequest = false
    /// Requests of this task sent again because the server did not process them (RFC 9113 §8.7).
    var unprocessedResends = 0
    /// Body pieces received but not yet delivered, in order.
    private var held: [ByteBuffer] = []
    private var heldEnd: HeldEnd?

    // MARK: the gate

    /// The one rule for delivering now: not suspended, no decision awaited, nothing held before.
    var mayDeliver: Bool { !isSuspended && !awaitingDecision && held.isEmpty }

    /// Whether held pieces may be released and a stored body read: running, not waiting for a
    /// decision.
    var isFlowing: Bool { !isSuspended && !awaitingDecision && !isCompleted }

    /// The delegate was asked about the response and has not answered.
    var awaitingDecision: Bool {
        if case .awaitingDecision = stage { return true }
        return false
    }

    var isCompleted: Bool {
        if case .completed = phase { return true }
        return false
    }

    /// Whether pieces are held.
    var holdsPieces: Bool { !held.isEmpty }

    // MARK: phase events

    /// The task waits for its begin date.
    mutating func waitForBeginDate(_ timer: Timer) {
        phase = .waitingForBeginDate(timer)
    }

    /// The begin-date timer fired; false when the task moved on meanwhile.
    mutating func beginDateReached() -> Bool {
        guard case .waitingForBeginDate = phase else { return false }
        phase = .idle
        return true
    }

    /// A request is about to be sent: a new exchange. Returns its number.
    mutating func sendingRequest() -> Int {
        exchange += 1
        return exchange
    }

    /// The pool was asked for a connection (`lease`: its id).
    mutating func leasing(_ lease: Int) {
        phase = .leasing(lease)
    }

    /// The pool answered the lease of `exchange`: true when it is still wanted (else the
    /// runner gives the connection back).
    func leaseAnswered(exchange: Int) -> Bool {
        guard exchange == self.exchange, case .leasing = phase else { return false }
        return true
    }

    /// The leased connection was given back before an exchange started on it (the server's trust
    /// refused, a client certificate to present on a new one, a cancelled challenge).
    mutating func leasedConnectionDropped() {
        if case .leasing = phase { phase = .idle }
    }

    /// The exchange starts on `connection`.
    mutating func exchangeStarted(on connection: Connection) {
        phase = .exchanging(connection)
    }

    /// Whether an event of exchange `number` is still the task's: anything of an exchange that
    /// ended, was abandoned, or of a completed task is late.
    func accepts(exchange number: Int) -> Bool {
        number == exchange
    }

    /// Where the task is now, for an answer that comes from off the loop (a cache commit, a
    /// stored header update): ``isStill(at:)`` refuses it once the task started another exchange
    /// or completed.
    var mark: Int { exchange }

    /// Whether an answer taken at `mark` is still the task's; false: drop it.
    func isStill(at mark: Int) -> Bool {
        mark == exchange
    }

    /// The response ended. Returns the connection to release (nil when none runs); later
    /// events of this exchange are late.
    mutating func exchangeEnded() -> Connection? {
        exchange += 1
        guard case .exchanging(let connection) = phase else { return nil }
        phase = .idle
        return connection
    }

    /// The exchange failed: the connection to release (nil: no exchange runs, the failure is late).
    mutating func exchangeFailed() -> Connection? {
        guard case .exchanging(let connection) = phase else { return nil }
        phase = .idle
        exchange += 1
        return connection
    }

    /// The running exchange's connection leaves the pool with the task (an upgrade).
    mutating func connectionTaken() -> Connection? {
        exchangeFailed()
    }

    /// The connection the current exchange runs on.
    var connection: Connection? {
        if case .exchanging(let connection) = phase { return connection }
        return nil
    }

    /// The task waits before trying to connect again.
    mutating func waitForConnectivity(_ timer: Timer) {
        phase = .waitingForConnectivity(timer)
    }

    /// The connectivity timer fired; false when the task moved on meanwhile.
    mutating func connectivityRetryDue() -> Bool {
        guard case .waitingForConnectivity = phase else { return false }
        phase = .idle
        return true
    }

    /// The task waits for another task's fetch of the same response.
    mutating func waitForLeader(_ timer: Timer) {
        phase = .waitingForLeader(timer)
    }

    /// The leader's fetch ended or the wait ran out: true the first time (look in the cache
    /// again), false for the other, and for either once the task moved on.
    mutating func leaderWaitEnded() -> Bool {
        guard case .waitingForLeader = phase else { return false }
        phase = .idle
        return true
    }

    /// A stored body is being sent.
    mutating func servingStoredBody() {
        if case .idle = phase { phase = .servingStored }
    }

    /// A read of the stored body came back (a piece, or a file region sent): false when the task
    /// no longer serves it (it completed, or its work was abandoned meanwhile): drop it.
    func storedReadArrived() -> Bool {
        if case .servingStored = phase { return true }
        return false
    }

    /// The work is abandoned: the task is idle after, or stays completed.
    mutating func abandon() -> Abandon {
        let action: Abandon
        switch phase {
        case .exchanging(let connection):
            exchange += 1
            action = .closeConnection(connection)
        case .leasing(let lease):
            exchange += 1
            action = .cancelLease(lease)
        case .waitingForBeginDate(let timer), .waitingForConnectivity(let timer), .waitingForLeader(let timer):
            action = .cancelTimer(timer)
        case .idle, .servingStored:
            action = .nothing
        case .completed:
            return .nothing
        }
        phase = .idle
        return action
    }

    /// The task completes: true the first time. Every later event is late; held pieces are dropped.
    mutating func complete() -> Bool {
        guard !isCompleted else { return false }
        phase = .completed
        exchange += 1
        held = []
        heldEnd = nil
        stage = .delivering
        return true
    }

    // MARK: delivery events

    /// The task was suspended; false when it already was, or completed (nothing to pause).
    mutating func suspend() -> Bool {
        guard !isSuspended, !isCompleted else { return false }
        isSuspended = true
        return true
    }

    /// The task was resumed; false when it was not suspended, or completed (nothing to unpause).
    mutating func resume() -> Bool {
        guard isSuspended, !isCompleted else { return false }
        isSuspended = false
        return true
    }

    /// The delegate is asked about the response: nothing is delivered until it answers.
    mutating func askedForDecision() {
        stage = .awaitingDecision
    }

    /// The delegate answered; false when no decision is awaited (the task completed meanwhile:
    /// the answer is late, drop it).
    mutating func decisionArrived() -> Bool {
        guard !isCompleted, case .awaitingDecision = stage else { return false }
        stage = .delivering
        return true
    }

    /// A body piece arrived: the piece to deliver now, or nil when the gate held it.
    mutating func bodyReceived(_ piece: ByteBuffer) -> ByteBuffer? {
        guard mayDeliver else {
            held.append(piece)
            return nil
        }
        return piece
    }

    /// The response ended: true to finish now, false when the end is held behind the gate.
    mutating func endReceived() -> Bool {
        guard mayDeliver, !isCompleted else {
            heldEnd = .end(keptReusable: nil)
            return false
        }
        return true
    }

    /// The response ended while the delegate decides on it: the end is held and the connection
    /// stays the task's until then (the delegate may answer becomeStream).
    mutating func endReceivedKeepingConnection(reusable: Bool) {
        heldEnd = .end(keptReusable: reusable)
    }

    /// The end a stored body's reader reached: held, then released with what is held before it.
    mutating func storedBodyEnded() {
        heldEnd = .end(keptReusable: nil)
    }

    /// The exchange failed: the failure to act on now, or nil when it is held until resume.
    mutating func failureReceived(_ error: SessionError) -> SessionError? {
        guard isSuspended else { return error }
        heldEnd = .failure(error)
        return nil
    }

    /// Releases held things one at a time; the runner calls it until `.none`, so a piece whose
    /// delivery suspends the task, or makes it wait again, stops the rest.
    mutating func nextHeld() -> HeldStep {
        guard isFlowing else { return .none }
        if !held.isEmpty { return .deliver(held.removeFirst()) }
        switch heldEnd {
        case .none:
            return .none
        case .failure(let error):
            heldEnd = nil
            return .fail(error)
        case .end(let kept):
            heldEnd = nil
            // A connection still running was kept for the delegate's answer (or a 101's upgrade).
            guard case .exchanging(let connection) = phase else { return .finish(releasing: nil, reusable: false) }
            phase = .idle
            exchange += 1
            return .finish(releasing: connection, reusable: kept ?? false)
        }
    }

    /// Takes every held piece (a response becoming a stream carries them on).
    mutating func takeHeldPieces() -> [ByteBuffer] {
        defer { held = [] }
        return held
    }

    /// Drops every held piece (a cancel).
    mutating func dropHeldPieces() {
        held = []
    }
}

// MARK: - retries (redirect, 401, 407)

extension TaskMachine {
    /// Whether one more redirect may be followed.
    func mayRedirect(maximum: Int) -> Bool {
        redirectCount < maximum
    }

    /// Whether a redirect, 401 or 407 is held.
    var holdsRetry: Bool {
        if case .retrying = stage { return true }
        return false
    }

    /// A redirect, 401 or 407 response is held instead of delivered; `follow`: the request to
    /// send once it ended, when known already (a 407's retry, a stale Digest nonce). Returns the
    /// hold's id, which its answer carries.
    mutating func holdForRetry(
        _ kind: PendingRetry.Kind,
        head: HTTPResponseHead,
        newRequest: Request,
        follow: Request? = nil
    ) -> Int {
        lastRetryID += 1
        stage = .retrying(PendingRetry(kind: kind, head: head, newRequest: newRequest, id: lastRetryID, follow: follow))
        return lastRetryID
    }

    /// The hold `id` an answer is for; nil when the answer is late (drop it).
    func pendingRetry(_ id: Int) -> PendingRetry? {
        guard case .retrying(let pending) = stage, pending.id == id else { return nil }
        return pending
    }

    /// No challenge could be raised for a held 401 after all: it is delivered as it is.
    mutating func retryNotNeeded() {
        if case .retrying = stage { stage = .delivering }
    }

    /// A piece of the response's body: true when it is the held response's (kept while it may
    /// still be delivered), false when the response is the task's.
    mutating func retryBodyReceived(_ piece: ByteBuffer) -> Bool {
        guard case .retrying(var pending) = stage else { return false }
        pending.bodyBytes += piece.readableBytes
        if pending.follow == nil { pending.body.append(piece) }
        stage = .retrying(pending)
        return true
    }

    /// The response ended: the held retry is followed when its answer is in; `.drop` when no
    /// retry is held (the end is the task's).
    mutating func retryEnded() -> RetryStep {
        guard case .retrying(var pending) = stage else { return .drop }
        pending.ended = true
        stage = .retrying(pending)
        return followIfReady()
    }

    /// The answer for hold `id` is to send `request`: followed now when the response has ended.
    mutating func followRetry(_ id: Int, with request: Request) -> RetryStep {
        guard case .retrying(var pending) = stage, pending.id == id else { return .drop }
        pending.follow = request
        pending.body = []  // it will not be delivered
        stage = .retrying(pending)
        return followIfReady()
    }

    /// The answer for hold `id` is to deliver the held response after all: the hold to deliver
    /// (the stage is the response's again), nil when the answer is late.
    mutating func deliverRetry(_ id: Int) -> PendingRetry? {
        guard case .retrying(let pending) = stage, pending.id == id else { return nil }
        stage = .delivering
        return pending
    }

    private mutating func followIfReady() -> RetryStep {
        guard case .retrying(let pending) = stage, pending.ended, let request = pending.follow else { return .wait }
        stage = .delivering
        resentCurrentRequest = false  // a new request
        if pending.kind == .redirect { redirectCount += 1 }
        return .follow(request)
    }
}

