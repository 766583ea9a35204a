import Testing
import TollgateHTTP

@testable import TollgateProxy

/// The client connection's state machine event by event: no channel, no I/O.
@Suite("ClientConnectionMachine, event by event")
struct ClientConnectionMachineTests {
    private static func head(
        _ method: String = "GET",
        minorVersion: Int = 1,
        fields: [(String, String)] = [],
        framing: ClientRequestHead.Framing = .none
    ) -> ClientRequestHead {
        var headerFields = HeaderFields()
        for (name, value) in fields { headerFields.add(name: name, value: value) }
        return ClientRequestHead(
            method: method, target: "http://a.test/", minorVersion: minorVersion, headerFields: headerFields,
            framing: framing, byteCount: 0
        )
    }

    private static func active() -> ClientConnectionMachine {
        var machine = ClientConnectionMachine()
        machine.channelActivated()
        return machine
    }

    @Test("Request ended, then response ended: the next request is served")
    func requestThenResponse() {
        var machine = Self.active()
        machine.requestHeadReceived(Self.head())
        let answer1 = machine.requestBodyEnded(bufferedBytes: 0)
        #expect(answer1 == .none)
        #expect(!machine.willClose)
        let answer2 = machine.responseEnded(bufferedBytes: 0)
        #expect(answer2 == .serveNextRequest)
        #expect(!machine.isServing)
    }

    @Test("Response ended before the request's body: the next request waits for the body's end")
    func responseBeforeRequestEnd() {
        var machine = Self.active()
        machine.requestHeadReceived(Self.head())
        let answer3 = machine.responseEnded(bufferedBytes: 0)
        #expect(answer3 == .none)
        let answer4 = machine.requestBodyEnded(bufferedBytes: 0)
        #expect(answer4 == .serveNextRequest)
    }

    @Test("Connection: close, HTTP/1.0, CONNECT and upgrades close after their response")
    func closeAfter() {
        for head in [
            Self.head(fields: [("Connection", "close")]), Self.head(minorVersion: 0), Self.head("CONNECT"),
            Self.head(fields: [("Connection", "upgrade"), ("Upgrade", "websocket")]),
        ] {
            var machine = Self.active()
            machine.requestHeadReceived(head)
            #expect(machine.willClose)
            _ = machine.requestBodyEnded(bufferedBytes: 0)
            let answer5 = machine.responseEnded(bufferedBytes: 0)
            #expect(answer5 == .closeAfterFlush)
        }
        var keptAlive = Self.active()
        keptAlive.requestHeadReceived(Self.head(minorVersion: 0, fields: [("Connection", "keep-alive")]))
        #expect(!keptAlive.willClose)
    }

    @Test("A response that asks to close, or one before an unread body, closes the connection")
    func responseAsksToClose() {
        var machine = Self.active()
        machine.requestHeadReceived(Self.head())
        machine.responseStarted(close: true)
        let answer6 = machine.responseEnded(bufferedBytes: 0)
        #expect(answer6 == .closeAfterFlush)

        var unread = Self.active()
        unread.requestHeadReceived(Self.head("POST", framing: .length(5)))
        #expect(unread.hasUnreadBody)
        let answer7 = unread.responseEnded(bufferedBytes: 0)
        #expect(answer7 == .closeAfterFlush)
    }

    @Test("The client's EOF closes an idle connection at once, and a busy one after its cycle when nothing is buffered")
    func clientEOF() {
        var idle = Self.active()
        let answer8 = idle.clientInputEnded()
        #expect(answer8)

        var busy = Self.active()
        busy.requestHeadReceived(Self.head())
        let answer9 = busy.clientInputEnded()
        #expect(!answer9)
        _ = busy.requestBodyEnded(bufferedBytes: 0)
        let answer10 = busy.responseEnded(bufferedBytes: 0)
        #expect(answer10 == .closeAfterFlush)

        var pipelined = Self.active()
        pipelined.requestHeadReceived(Self.head())
        _ = pipelined.clientInputEnded()
        _ = pipelined.requestBodyEnded(bufferedBytes: 10)
        let answer11 = pipelined.responseEnded(bufferedBytes: 10)
        #expect(answer11 == .serveNextRequest)
    }

    @Test("Quiescing closes an idle connection now and a busy one after its response")
    func quiescing() {
        var idle = Self.active()
        let answer12 = idle.quiesceRequested()
        #expect(answer12)
        var busy = Self.active()
        busy.requestHeadReceived(Self.head())
        let answer13 = busy.quiesceRequested()
        #expect(!answer13)
        #expect(busy.willClose)
    }

    @Test("A failed request goes to the exchange while its response has not ended; else the connection answers")
    func failures() {
        var machine = Self.active()
        let answer14 = machine.requestFailed(exchangeRunning: false)
        #expect(answer14 == .answerItself)
        machine.requestHeadReceived(Self.head("POST", framing: .length(5)))
        let answer15 = machine.requestFailed(exchangeRunning: true)
        #expect(answer15 == .tellExchange)
        _ = machine.responseEnded(bufferedBytes: 0)
        let answer16 = machine.requestFailed(exchangeRunning: true)
        #expect(answer16 == .answerItself)
    }

    @Test("Reads wait for holds, body pieces, a stopped decoder and the read-ahead limit; a waiting read resumes once")
    func readGating() {
        var machine = Self.active()
        let answer17 = machine.readRequested(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: false)
        #expect(answer17)
        machine.readsHeld()
        let answer18 = machine.readRequested(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: false)
        #expect(!answer18)
        machine.readsReleased()
        machine.bodyPieceSent()
        let answer19 = machine.readsMayResume(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: false)
        #expect(!answer19)
        machine.bodyPieceTaken()
        let answer20 = machine.readsMayResume(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: false)
        #expect(answer20)
        let answer21 = machine.readsMayResume(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: false)
        #expect(!answer21, "once")
        let limit = ClientConnectionMachine.readAheadLimit
        let answer22 = machine.readRequested(bufferedBytes: limit, decoderStopped: false, relayWantsBytes: false)
        #expect(!answer22)
        let answer23 = machine.readsMayResume(bufferedBytes: 0, decoderStopped: true, relayWantsBytes: false)
        #expect(!answer23)
        machine.relayStarted()
        let answer24 = machine.readsMayResume(bufferedBytes: limit, decoderStopped: true, relayWantsBytes: true)
        #expect(answer24)
        machine.closeStarted()
        let answer25 = machine.readRequested(bufferedBytes: 0, decoderStopped: false, relayWantsBytes: true)
        #expect(!answer25)
    }

    @Test("The body timeout runs only while the connection waits for body bytes nobody holds")
    func waitsForBody() {
        var machine = Self.active()
        machine.requestHeadReceived(Self.head("POST", framing: .length(5)))
        #expect(machine.waitsForRequestBody)
        machine.readsHeld()
        #expect(!machine.waitsForRequestBody)
        machine.readsReleased()
        _ = machine.requestBodyEnded(bufferedBytes: 0)
        #expect(!machine.waitsForRequestBody)
    }
}
