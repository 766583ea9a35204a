import NIOCore
import NIOWebSocket
import Testing
@testable import TollgateSession

private func text(_ string: String, fin: Bool = true) -> WebSocketFrame {
    WebSocketFrame(fin: fin, opcode: .text, data: ByteBuffer(string: string))
}

private func frame(_ opcode: WebSocketOpcode, _ bytes: [UInt8] = [], fin: Bool = true) -> WebSocketFrame {
    WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(bytes: bytes))
}

private func close(_ code: UInt16?, _ reason: String = "") -> WebSocketFrame {
    var payload = ByteBuffer()
    if let code { payload.writeInteger(code) }
    payload.writeString(reason)
    return WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
}

/// An open machine with a 100-byte message limit.
private func openMachine() -> WebSocketMachine {
    var machine = WebSocketMachine(maximumMessageSize: 100)
    _ = machine.handshakeCompleted()
    return machine
}

/// The error of the first `closeConnection` among `actions`.
private func closingError(_ actions: [WebSocketMachine.Action]) -> SessionError?? {
    for case .closeConnection(let error) in actions { return .some(error) }
    return nil
}

@Suite("WebSocketMachine, event by event")
struct WebSocketMachineTests {
    @Test("Sends, receives and pings before the handshake wait, then go out in order")
    func queuedUntilOpen() {
        var machine = WebSocketMachine(maximumMessageSize: 100)
        #expect(machine.send(.string("a")) == [])
        #expect(machine.sendPing() == [])
        #expect(machine.receive() == [])
        #expect(machine.send(.data(ByteBuffer(bytes: [1]))) == [])
        #expect(!machine.wantsToRead)
        #expect(
            machine.handshakeCompleted() == [
                .write(text("a"), completesSend: true), .write(frame(.ping), completesSend: false),
                .write(frame(.binary, [1]), completesSend: true),
            ])
        #expect(machine.outstandingPings == 1)
        #expect(machine.waitingReceives == 1)
        #expect(machine.wantsToRead)
        #expect(machine.frameReceived(text("hi")) == [.deliver(.string("hi"))])
        #expect(machine.frameReceived(frame(.pong)) == [.answerPing])
    }

    @Test("A message in fragments is delivered whole; one that arrives before a receive waits for it")
    func fragments() {
        var machine = openMachine()
        #expect(machine.frameReceived(text("frag", fin: false)) == [])
        #expect(machine.frameReceived(frame(.continuation, Array("ment".utf8), fin: false)) == [])
        #expect(machine.frameReceived(frame(.continuation, Array("ed".utf8))) == [])
        #expect(machine.ready == [.string("fragmented")])
        #expect(machine.receive() == [.deliver(.string("fragmented"))])
        #expect(machine.receive() == [])
    }

    @Test("Pings are answered with a pong carrying their payload; an unsolicited pong answers nothing")
    func pingAndPong() {
        var machine = openMachine()
        #expect(machine.frameReceived(frame(.ping, [7, 8])) == [.write(frame(.pong, [7, 8]), completesSend: false)])
        #expect(machine.frameReceived(frame(.pong)) == [])
        _ = machine.sendPing()
        _ = machine.sendPing()
        #expect(machine.frameReceived(frame(.pong)) == [.answerPing])
        #expect(machine.outstandingPings == 1)
    }

    @Test("A message over the limit, fragments counted together, fails with 1009 and dataLengthExceedsMaximum")
    func tooBig() {
        var machine = openMachine()
        _ = machine.receive()
        #expect(machine.frameReceived(frame(.binary, Array(repeating: 1, count: 60), fin: false)) == [])
        let actions = machine.frameReceived(frame(.continuation, Array(repeating: 1, count: 41)))
        #expect(actions.first == .write(WebSocketMachine.closeFrame(.init(code: .messageTooBig, reason: nil)), completesSend: false))
        #expect(closingError(actions)??.code == .dataLengthExceedsMaximum)
        #expect(machine.closure?.code == .messageTooBig)
        #expect(machine.waitingReceives == 0)
    }

    @Test("Protocol errors close with 1002 or 1007 as RFC 6455 says")
    func protocolErrors() {
        let cases: [(WebSocketFrame, WebSocketCloseCode)] = [
            (WebSocketFrame(fin: true, opcode: .text, maskKey: [1, 2, 3, 4], data: ByteBuffer(string: "x")), .protocolError),
            (WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: ByteBuffer(string: "x")), .protocolError),
            (frame(.continuation, [1]), .protocolError),
            (frame(WebSocketOpcode(encodedWebSocketOpcode: 3)!), .protocolError),
            (frame(.text, [0xC3, 0x28]), .invalidFramePayloadData),
            (close(nil) .withPayload([3]), .protocolError),
            (close(1005), .protocolError),
            (close(999), .protocolError),
            (close(1000) .withPayload([0x03, 0xE8, 0xFF]), .invalidFramePayloadData),
        ]
        for (received, code) in cases {
            var machine = openMachine()
            let actions = machine.frameReceived(received)
            #expect(machine.closure?.code == code, "\(received)")
            #expect(closingError(actions)??.code == .badServerResponse, "\(received)")
        }
        var machine = openMachine()
        _ = machine.frameReceived(text("a", fin: false))
        _ = machine.frameReceived(text("b"))
        #expect(machine.closure?.code == .protocolError, "a new message inside a fragmented one")
        var decoding = openMachine()
        #expect(closingError(decoding.decodingFailed(.invalidFrameLength))??.code == .dataLengthExceedsMaximum)
    }

    @Test("The server's close: reported, answered with its code, waiting calls fail, the task ends without error")
    func serverCloses() {
        var machine = openMachine()
        _ = machine.receive()
        _ = machine.sendPing()
        let actions = machine.frameReceived(close(4000, "bye"))
        #expect(actions.count == 4)
        #expect(actions[0] == .reportClose(WebSocketCloseCode(rawValue: 4000), reason: ByteBuffer(string: "bye")))
        #expect(actions[1] == .write(close(4000), completesSend: false))
        #expect(actions[3] == .closeConnection(nil))
        #expect(machine.closure == .init(code: WebSocketCloseCode(rawValue: 4000), reason: ByteBuffer(string: "bye")))
        #expect(machine.receive().first.map { if case .failReceive = $0 { true } else { false } } == true)
        #expect(machine.send(.string("late")).count == 1)
    }

    @Test("A close frame without a code is 1005 and answered with an empty close frame")
    func serverClosesWithoutCode() {
        var machine = openMachine()
        let actions = machine.frameReceived(close(nil))
        #expect(actions[0] == .reportClose(.noStatusReceived, reason: nil))
        #expect(actions[1] == .write(close(nil), completesSend: false))
    }

    @Test("cancel(with:reason:) closes with its code, waits for the peer's close, then ends without error")
    func clientCloses() {
        var machine = openMachine()
        let actions = machine.close(code: .goingAway, reason: ByteBuffer(string: "later"))
        #expect(actions.first == .write(close(1001, "later"), completesSend: false))
        #expect(actions.last == .awaitPeerClose)
        #expect(machine.closure == nil)
        #expect(machine.frameReceived(text("dropped")) == [])
        #expect(machine.frameReceived(close(1001)) == [.reportClose(.goingAway, reason: nil), .closeConnection(nil)])
        #expect(machine.closure == .init(code: .goingAway, reason: ByteBuffer(string: "later")))
    }

    @Test("A close the peer never answers times out; a code that may not be sent sends none")
    func clientCloseTimesOut() {
        var machine = openMachine()
        #expect(machine.close(code: .abnormalClosure, reason: ByteBuffer(string: "x")).first == .write(close(nil), completesSend: false))
        #expect(closingError(machine.closeTimedOut())??.code == .timedOut)
        #expect(machine.closure?.code == .noStatusReceived)
    }

    @Test("cancel() sends a close frame without a code and ends at once with cancelled")
    func cancelWithoutCode() {
        var machine = openMachine()
        let actions = machine.cancel()
        #expect(actions.first == .write(close(nil), completesSend: false))
        #expect(closingError(actions)??.code == .cancelled)
        #expect(machine.closure?.code == .noStatusReceived)
    }

    @Test("A lost connection is 1006: everything waiting fails with networkConnectionLost")
    func connectionLost() {
        var machine = openMachine()
        _ = machine.sendPing()
        let actions = machine.connectionClosed()
        #expect(actions.count == 2)
        #expect(closingError(actions)??.code == .networkConnectionLost)
        #expect(machine.closure?.code == .abnormalClosure)
        #expect(machine.outstandingPings == 0)
        #expect(machine.connectionClosed() == [])
    }

    @Test("Messages that arrived before the close are still received after it")
    func readyAfterClose() {
        var machine = openMachine()
        _ = machine.frameReceived(text("last words"))
        _ = machine.frameReceived(close(1000))
        #expect(machine.receive() == [.deliver(.string("last words"))])
        #expect(machine.receive().count == 1)
    }

    @Test("The socket is read only while fewer than 8 messages wait for a receive")
    func readAhead() {
        var machine = openMachine()
        for number in 0..<WebSocketMachine.readAhead { _ = machine.frameReceived(text("\(number)")) }
        #expect(!machine.wantsToRead)
        _ = machine.receive()
        #expect(machine.wantsToRead)
    }

    @Test("A failed handshake fails what waited and leaves the close code invalid")
    func handshakeFails() {
        var machine = WebSocketMachine(maximumMessageSize: 100)
        _ = machine.send(.string("a"))
        #expect(machine.handshakeFailed(SessionError(.badServerResponse)) == [.failAllWaiting(SessionError(.badServerResponse))])
        #expect(machine.closure?.code == .invalid)
        #expect(machine.handshakeCompleted() == [])
        let later = machine.send(.string("b"))
        #expect(later == [.failSend(SessionError(.badServerResponse))])
    }

    @Test("A compressed message that does not decompress fails the connection with 1007; one too big with 1009")
    func inflationFailures() {
        var corrupt = openMachine()
        _ = corrupt.receive()
        let actions = corrupt.inflationFailed(.corrupt("invalid block type"))
        #expect(actions.contains(.write(WebSocketMachine.closeFrame(.init(code: .invalidFramePayloadData, reason: nil)), completesSend: false)))
        #expect(corrupt.closure?.code == .invalidFramePayloadData)
        var big = openMachine()
        _ = big.inflationFailed(.tooBig)
        #expect(big.closure?.code == .messageTooBig)
    }
}

extension WebSocketFrame {
    /// The frame with `bytes` as its payload instead.
    fileprivate func withPayload(_ bytes: [UInt8]) -> WebSocketFrame {
        WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(bytes: bytes))
    }
}
