import NIOCore
import Testing
@testable import TollgateSession

/// ``TaskMachine`` event by event, with connections and timers as plain values.
@Suite("Task state machine")
struct TaskMachineTests {
    typealias Machine = TaskMachine<String, String>

    static func piece(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
    static let lost = SessionError(.networkConnectionLost, nil, "lost")

    /// A machine with an exchange running on connection "c1"; returns its number.
    static func exchanging(_ machine: inout Machine, on connection: String = "c1", lease: Int = 7) -> Int {
        let number = machine.sendingRequest()
        machine.leasing(lease)
        #expect(machine.leaseAnswered(exchange: number))
        machine.exchangeStarted(on: connection)
        return number
    }

    // MARK: phases

    @Test("A task waits for its begin date, then goes on; a timer that fires after a cancel is turned down")
    func beginDate() {
        var machine = Machine()
        machine.waitForBeginDate("t")
        let beginDateReached = machine.beginDateReached()
        #expect(beginDateReached)
        let beginDateReached2 = machine.beginDateReached()
        #expect(!beginDateReached2)
        machine.waitForBeginDate("t")
        let abandon = machine.abandon()
        #expect(abandon == .cancelTimer("t"))
        let beginDateReached3 = machine.beginDateReached()
        #expect(!beginDateReached3)
    }

    @Test("A lease answered for the current exchange starts it; one for an earlier exchange is given back")
    func leasing() {
        var machine = Machine()
        let first = machine.sendingRequest()
        machine.leasing(1)
        let second = machine.sendingRequest()  // e.g. a retry: the first lease's answer is late
        machine.leasing(2)
        #expect(!machine.leaseAnswered(exchange: first))
        #expect(machine.leaseAnswered(exchange: second))
        machine.exchangeStarted(on: "c")
        #expect(machine.connection == "c")
        #expect(!machine.leaseAnswered(exchange: second))  // answered once: now exchanging
    }

    @Test("A connection dropped before its exchange leaves the task idle")
    func leasedConnectionDropped() {
        var machine = Machine()
        _ = machine.sendingRequest()
        machine.leasing(3)
        machine.leasedConnectionDropped()
        let abandon = machine.abandon()
        #expect(abandon == .nothing)
    }

    @Test("An exchange's end releases its connection; its later events are late")
    func exchangeEnds() {
        var machine = Machine()
        let number = Self.exchanging(&machine)
        #expect(machine.accepts(exchange: number))
        let exchangeEnded = machine.exchangeEnded()
        #expect(exchangeEnded == "c1")
        #expect(!machine.accepts(exchange: number))
        #expect(machine.connection == nil)
        let exchangeFailed = machine.exchangeFailed()
        #expect(exchangeFailed == nil)  // a failure after the end is not the task's
    }

    @Test("A failed exchange releases its connection once")
    func exchangeFails() {
        var machine = Machine()
        let number = Self.exchanging(&machine)
        let exchangeFailed = machine.exchangeFailed()
        #expect(exchangeFailed == "c1")
        #expect(!machine.accepts(exchange: number))
        let exchangeFailed2 = machine.exchangeFailed()
        #expect(exchangeFailed2 == nil)
    }

    @Test("Waiting for connectivity: the retry timer goes on once; abandoned, it is cancelled")
    func connectivity() {
        var machine = Machine()
        machine.waitForConnectivity("retry")
        let connectivityRetryDue = machine.connectivityRetryDue()
        #expect(connectivityRetryDue)
        let connectivityRetryDue2 = machine.connectivityRetryDue()
        #expect(!connectivityRetryDue2)
        machine.waitForConnectivity("retry")
        let abandon = machine.abandon()
        #expect(abandon == .cancelTimer("retry"))
        let connectivityRetryDue3 = machine.connectivityRetryDue()
        #expect(!connectivityRetryDue3)
    }

    @Test("A connection taken for an upgrade leaves the pool's exchange")
    func upgradeTakesTheConnection() {
        var machine = Machine()
        let number = Self.exchanging(&machine)
        let connectionTaken = machine.connectionTaken()
        #expect(connectionTaken == "c1")
        #expect(!machine.accepts(exchange: number))
    }

    @Test("Serving a stored body is a phase of its own, ended by completing")
    func servingStored() {
        var machine = Machine()
        machine.servingStoredBody()
        guard case .servingStored = machine.phase else {
            Issue.record("expected servingStored, got \(machine.phase)")
            return
        }
        let endReceived = machine.endReceived()
        #expect(endReceived)
        let complete = machine.complete()
        #expect(complete)
        #expect(machine.isCompleted)
    }

    // MARK: cancel in each phase

    @Test("Cancel in each phase stops what runs there, then completes once")
    func cancelInEachPhase() {
        var idle = Machine()
        let abandon = idle.abandon()
        #expect(abandon == .nothing)
        let complete = idle.complete()
        #expect(complete)
        let complete2 = idle.complete()
        #expect(!complete2)

        var waiting = Machine()
        waiting.waitForBeginDate("begin")
        let abandon2 = waiting.abandon()
        #expect(abandon2 == .cancelTimer("begin"))

        var leasing = Machine()
        let number = leasing.sendingRequest()
        leasing.leasing(9)
        let abandon3 = leasing.abandon()
        #expect(abandon3 == .cancelLease(9))
        #expect(!leasing.leaseAnswered(exchange: number))

        var exchanging = Machine()
        let running = Self.exchanging(&exchanging)
        let abandon4 = exchanging.abandon()
        #expect(abandon4 == .closeConnection("c1"))
        #expect(!exchanging.accepts(exchange: running))

        var connectivity = Machine()
        connectivity.waitForConnectivity("retry")
        let abandon5 = connectivity.abandon()
        #expect(abandon5 == .cancelTimer("retry"))
    }

    @Test("A completed task turns every event away and stays completed")
    func completedIgnoresEverything() {
        var machine = Machine()
        let number = Self.exchanging(&machine)
        let complete = machine.complete()
        #expect(complete)
        #expect(!machine.accepts(exchange: number))
        #expect(!machine.leaseAnswered(exchange: number))
        let decisionArrived = machine.decisionArrived()
        #expect(!decisionArrived)
        let abandon = machine.abandon()
        #expect(abandon == .nothing)  // a failure after completing does not reopen it
        #expect(machine.isCompleted)
        let endReceived = machine.endReceived()
        #expect(!endReceived)
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .none)
        let suspend = machine.suspend()
        #expect(!suspend)  // nothing to pause
    }

    @Test("A task suspended when it completes is not resumed: nothing to unpause")
    func completedWhileSuspended() {
        var machine = Machine()
        let suspend = machine.suspend()
        #expect(suspend)
        _ = machine.complete()
        let resume = machine.resume()
        #expect(!resume)
    }

    // MARK: the delivery gate

    @Test("Pieces go through while the gate is open; the end finishes at once")
    func openGate() {
        var machine = Machine()
        #expect(machine.mayDeliver)
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == Self.piece("a"))
        let endReceived = machine.endReceived()
        #expect(endReceived)
    }

    @Test("While the delegate decides, pieces and the end are held, then released in order")
    func decisionHolds() {
        var machine = Machine()
        _ = Self.exchanging(&machine)
        machine.askedForDecision()
        #expect(!machine.mayDeliver)
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == nil)
        let bodyReceived2 = machine.bodyReceived(Self.piece("b"))
        #expect(bodyReceived2 == nil)
        machine.endReceivedKeepingConnection(reusable: true)
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .none)  // still deciding
        let decisionArrived = machine.decisionArrived()
        #expect(decisionArrived)
        let nextHeld2 = machine.nextHeld()
        #expect(nextHeld2 == .deliver(Self.piece("a")))
        let nextHeld3 = machine.nextHeld()
        #expect(nextHeld3 == .deliver(Self.piece("b")))
        // The connection kept for the delegate's answer is released with the end.
        let nextHeld4 = machine.nextHeld()
        #expect(nextHeld4 == .finish(releasing: "c1", reusable: true))
        let nextHeld5 = machine.nextHeld()
        #expect(nextHeld5 == .none)
        #expect(machine.connection == nil)
    }

    @Test("A piece arriving after held ones waits behind them even when the gate reopened")
    func heldPiecesKeepTheirOrder() {
        var machine = Machine()
        _ = machine.suspend()
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == nil)
        _ = machine.resume()
        #expect(!machine.mayDeliver)  // "a" is still held
        let bodyReceived2 = machine.bodyReceived(Self.piece("b"))
        #expect(bodyReceived2 == nil)
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .deliver(Self.piece("a")))
        let nextHeld2 = machine.nextHeld()
        #expect(nextHeld2 == .deliver(Self.piece("b")))
        #expect(machine.mayDeliver)
    }

    @Test("Suspend holds pieces and the end; resume releases them; a suspend midway stops the release")
    func suspendAndResume() {
        var machine = Machine()
        let suspend = machine.suspend()
        #expect(suspend)
        let suspend2 = machine.suspend()
        #expect(!suspend2)
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == nil)
        let bodyReceived2 = machine.bodyReceived(Self.piece("b"))
        #expect(bodyReceived2 == nil)
        let endReceived = machine.endReceived()
        #expect(!endReceived)
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .none)
        let resume = machine.resume()
        #expect(resume)
        let resume2 = machine.resume()
        #expect(!resume2)
        let nextHeld2 = machine.nextHeld()
        #expect(nextHeld2 == .deliver(Self.piece("a")))
        _ = machine.suspend()  // the delegate suspended the task while taking "a"
        let nextHeld3 = machine.nextHeld()
        #expect(nextHeld3 == .none)
        _ = machine.resume()
        let nextHeld4 = machine.nextHeld()
        #expect(nextHeld4 == .deliver(Self.piece("b")))
        let nextHeld5 = machine.nextHeld()
        #expect(nextHeld5 == .finish(releasing: nil, reusable: false))
    }

    @Test("A failure while suspended is held until resume, after the pieces before it")
    func heldFailure() {
        var machine = Machine()
        _ = Self.exchanging(&machine)
        _ = machine.suspend()
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == nil)
        let exchangeFailed = machine.exchangeFailed()
        #expect(exchangeFailed == "c1")
        let failureReceived = machine.failureReceived(Self.lost)
        #expect(failureReceived == nil)
        _ = machine.resume()
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .deliver(Self.piece("a")))
        let nextHeld2 = machine.nextHeld()
        #expect(nextHeld2 == .fail(Self.lost))
        let nextHeld3 = machine.nextHeld()
        #expect(nextHeld3 == .none)
    }

    @Test("A failure while running is acted on at once, even while the delegate decides")
    func failureWhileRunning() {
        var machine = Machine()
        machine.askedForDecision()
        let failureReceived = machine.failureReceived(Self.lost)
        #expect(failureReceived == Self.lost)
    }

    @Test("A stored body's end is released after the pieces held before it")
    func storedBodyEnd() {
        var machine = Machine()
        machine.servingStoredBody()
        _ = machine.suspend()
        let bodyReceived = machine.bodyReceived(Self.piece("a"))
        #expect(bodyReceived == nil)
        _ = machine.resume()
        machine.storedBodyEnded()
        let nextHeld = machine.nextHeld()
        #expect(nextHeld == .deliver(Self.piece("a")))
        let nextHeld2 = machine.nextHeld()
        #expect(nextHeld2 == .finish(releasing: nil, reusable: false))
    }

    @Test("Held pieces are taken whole by a stream, or dropped by a cancel")
    func takeAndDrop() {
        var machine = Machine()
        machine.askedForDecision()
        _ = machine.bodyReceived(Self.piece("a"))
        _ = machine.bodyReceived(Self.piece("b"))
        #expect(machine.holdsPieces)
        let takeHeldPieces = machine.takeHeldPieces()
        #expect(takeHeldPieces == [Self.piece("a"), Self.piece("b")])
        #expect(!machine.holdsPieces)
        _ = machine.bodyReceived(Self.piece("c"))
        machine.dropHeldPieces()
        #expect(!machine.holdsPieces)
    }
}
