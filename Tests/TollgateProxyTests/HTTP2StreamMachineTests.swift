import Testing

@testable import TollgateProxy

@Suite("The HTTP/2 stream machine, event by event")
struct HTTP2StreamMachineTests {
    @Test("The first HEADERS starts the request; a second before the end is the trailers, which end it")
    func headersAndTrailers() {
        var machine = HTTP2StreamMachine()
        let step1 = machine.headersReceived(endStream: false)
        #expect(step1 == .startRequest)
        let step2 = machine.dataReceived(endStream: false)
        #expect(step2 == .body(thenEnd: false))
        let step3 = machine.headersReceived(endStream: true)
        #expect(step3 == .endRequest)
        #expect(machine.requestEnded)
        let step4 = machine.dataReceived(endStream: false)
        #expect(step4 == .ignore)
    }

    @Test("Reads wait while a body piece waits for the session or reads are held, and resume once")
    func readHolding() {
        var machine = HTTP2StreamMachine()
        _ = machine.headersReceived(endStream: false)
        let step5 = machine.readRequested()
        #expect(step5)
        machine.bodyPieceSent()
        let step6 = machine.readRequested()
        #expect(!step6)
        machine.readsWereHeld()
        let step7 = machine.bodyPieceTaken()
        #expect(!step7)  // still held
        let step8 = machine.readsWereReleased()
        #expect(step8)  // the read held back goes now
        let step9 = machine.readsWereReleased()
        #expect(!step9)  // once
        let step10 = machine.readRequested()
        #expect(step10)
    }

    @Test("A response that ends before the request asks the client to stop sending (RST_STREAM NO_ERROR)")
    func earlyResponse() {
        var machine = HTTP2StreamMachine()
        _ = machine.headersReceived(endStream: false)
        let step11 = machine.responseEnded()
        #expect(step11 == .resetNoError)
        #expect(!machine.isServing)
        let step12 = machine.dataReceived(endStream: true)
        #expect(step12 == .ignore)
        let step13 = machine.closed()
        #expect(!step13)  // nothing to tell an exchange
    }

    @Test("A response after the whole request ends the stream quietly; a close while serving tells the exchange")
    func normalEndAndClose() {
        var ended = HTTP2StreamMachine()
        _ = ended.headersReceived(endStream: true)
        let step14 = ended.responseEnded()
        #expect(step14 == .none)
        var closed = HTTP2StreamMachine()
        _ = closed.headersReceived(endStream: true)
        let step15 = closed.closed()
        #expect(step15)
        let step16 = closed.headersReceived(endStream: true)
        #expect(step16 == .ignore)
    }
}

@Suite("The HTTP/2 stream machine of a CONNECT stream, event by event")
struct HTTP2StreamMachineTunnelTests {
    @Test("While the tunnel opens reads are held and DATA is tunnel bytes; the body timeout does not run")
    func opening() {
        var machine = HTTP2StreamMachine()
        _ = machine.headersReceived(endStream: false)
        machine.tunnelRequested()
        #expect(machine.tunnel == .opening)
        #expect(!machine.waitsForClientBody)
        let read = machine.readRequested()
        #expect(!read)
        let data = machine.dataReceived(endStream: false)
        #expect(data == .tunnel(thenEnd: false))
        machine.relayStarted()
        #expect(machine.tunnel == .relaying)
        let busy = machine.relayMayRead(relayWantsBytes: false)
        #expect(!busy)  // the relay still writes the first bytes
        let free = machine.relayMayRead(relayWantsBytes: true)
        #expect(free)  // the read held back goes now
        let again = machine.relayMayRead(relayWantsBytes: true)
        #expect(!again)  // once
    }

    @Test("While relaying a read goes only when the relay wants bytes; END_STREAM is the client's half-close")
    func relaying() {
        var machine = HTTP2StreamMachine()
        _ = machine.headersReceived(endStream: false)
        machine.tunnelRequested()
        machine.relayStarted()
        let wanted = machine.readRequested(relayWantsBytes: true)
        #expect(wanted)
        let unwanted = machine.readRequested(relayWantsBytes: false)
        #expect(!unwanted)
        let end = machine.dataReceived(endStream: true)
        #expect(end == .tunnel(thenEnd: true))
        #expect(machine.requestEnded)
        let after = machine.responseEnded()
        #expect(after == .none)
    }

    @Test("A tunnel refused with an answer while the client's side is open asks the client to stop")
    func refused() {
        var machine = HTTP2StreamMachine()
        _ = machine.headersReceived(endStream: false)
        machine.tunnelRequested()
        machine.responseHeadSent()
        let end = machine.responseEnded()
        #expect(end == .resetNoError)
        let read = machine.readRequested()
        #expect(read)
    }
}
