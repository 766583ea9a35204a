import NIOCore
import NIOHTTP2
import Testing
import TollgateHTTP

@testable import TollgateSession

/// ``TaskMachine``'s rule for a request lost before its response began, event by event: a request
/// the server did not process (RFC 9113 §8.7) goes again whatever its method, a bounded number of
/// times per task; one lost with its connection, only when idempotent on a reused connection, once.
@Suite("Task state machine: resending a lost request")
struct TaskMachineResendTests {
    typealias Machine = TaskMachine<String, String>

    static func exchanging(_ machine: inout Machine, on connection: String) {
        _ = machine.sendingRequest()
        machine.leasing(1)
        machine.exchangeStarted(on: connection)
    }

    @Test("A refused request is resent whatever its method and on a new connection too, up to the bound; then the refusal fails the task")
    func refusedUpToTheBound() {
        var machine = Machine()
        var steps: [Machine.ResendStep] = []
        for attempt in 0...Machine.maximumUnprocessedResends {
            Self.exchanging(&machine, on: "c\(attempt)")
            #expect(machine.exchangeFailed() == "c\(attempt)")
            steps.append(machine.exchangeLost(.notProcessed))
        }
        #expect(Machine.maximumUnprocessedResends >= 2)
        #expect(steps == Array(repeating: .resend, count: Machine.maximumUnprocessedResends) + [.fail])
        #expect(machine.unprocessedResends == Machine.maximumUnprocessedResends)
    }

    @Test("Refusals are counted per task: a redirect's new request does not start the count again")
    func boundPerTask() {
        var machine = Machine()
        for _ in 0..<Machine.maximumUnprocessedResends { _ = machine.exchangeLost(.notProcessed) }
        Self.exchanging(&machine, on: "c1")
        let hold = machine.holdForRetry(.redirect, head: HTTPResponseHead(status: 302), newRequest: Request(url: HTTPURL(string: "https://a.test/b")!))
        _ = machine.exchangeEnded()
        _ = machine.retryEnded()
        _ = machine.followRetry(hold, with: Request(url: HTTPURL(string: "https://a.test/b")!))
        #expect(machine.exchangeLost(.notProcessed) == .fail)
        // The HTTP/1.1 rule is per request, and the redirect's is new.
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: true, idempotent: true)) == .resend)
    }

    @Test("A lost connection resends only an idempotent request that went on a reused connection, once; refusals do not use that once up")
    func connectionLostRule() {
        var machine = Machine()
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: true, idempotent: false)) == .fail)  // a POST: maybe processed
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: false, idempotent: true)) == .fail)  // a new connection: no race
        #expect(machine.exchangeLost(.notProcessed) == .resend)
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: true, idempotent: true)) == .resend)
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: true, idempotent: true)) == .fail)
        #expect(machine.exchangeLost(.notProcessed) == .resend)  // still within the refusals' bound
    }

    @Test("A new connection to one of several connect-to targets, lost, resends an idempotent request once; never a POST")
    func connectionLostToATarget() {
        var machine = Machine()
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: false, idempotent: false, anotherTarget: true)) == .fail)
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: false, idempotent: true, anotherTarget: true)) == .resend)
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: false, idempotent: true, anotherTarget: true)) == .fail)
        #expect(machine.exchangeLost(.connectionLost(reusedConnection: true, idempotent: true)) == .fail)  // the once is used
    }

    @Test("Nothing is resent for a task that completed")
    func completed() {
        var machine = Machine()
        _ = machine.complete()
        #expect(machine.exchangeLost(.notProcessed) == .fail)
        #expect(machine.unprocessedResends == 0)
    }

    @Test("A stream is refused by GOAWAY only above its last stream id, and only once a GOAWAY came")
    func refusedByGoAway() {
        let refused = HTTP2StreamExchangeState.refusedByGoAway
        #expect(refused(HTTP2StreamID(5), HTTP2StreamID(3)))
        #expect(!refused(HTTP2StreamID(3), HTTP2StreamID(3)))  // may have been processed
        #expect(!refused(HTTP2StreamID(1), HTTP2StreamID(3)))
        #expect(!refused(HTTP2StreamID(5), nil))  // no GOAWAY
        #expect(!refused(nil, HTTP2StreamID(3)))  // no stream id: never sent
        #expect(refused(HTTP2StreamID(1), HTTP2StreamID(0)))  // GOAWAY 0: nothing processed
    }

    @Test("REFUSED_STREAM, as a frame or as NIOHTTP2's stream-closed error, marks the error not processed; other resets do not")
    func refusalsMarked() {
        var state = HTTP2StreamExchangeState()
        let started = state.startRequest()
        #expect(started)
        guard case .failed(let refused) = state.received(.rstStream(.refusedStream)) else {
            Issue.record("no failure")
            return
        }
        #expect(refused.notProcessed)
        #expect(refused.code == .networkConnectionLost)
        #expect(refused.detail.contains("REFUSED_STREAM"))
        var other = HTTP2StreamExchangeState()
        _ = other.startRequest()
        guard case .failed(let cancelled) = other.received(.rstStream(.cancel)) else {
            Issue.record("no failure")
            return
        }
        #expect(!cancelled.notProcessed)
        let byGoAway = HTTP2StreamHandler.sessionError(for: NIOHTTP2Errors.streamClosed(streamID: 5, errorCode: .refusedStream))
        #expect(byGoAway.notProcessed)
        let reset = HTTP2StreamHandler.sessionError(for: NIOHTTP2Errors.streamClosed(streamID: 5, errorCode: .internalError))
        #expect(!reset.notProcessed)
        #expect(HTTP2StreamHandler.sessionError(for: NIOHTTP2Errors.createdStreamAfterGoaway()).notProcessed)
    }
}
