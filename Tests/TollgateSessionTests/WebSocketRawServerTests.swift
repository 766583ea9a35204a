import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// A scripted origin that answers the handshake with a 101 (its accept value computed from the
/// request's key unless `accept` is given) followed by `frames`, raw bytes no WebSocket library
/// would send: what a broken or hostile server does.
private func rawServer(
    accept: String? = nil,
    frames: [UInt8],
    closeAfter delay: TimeAmount? = nil
) async throws -> LoopbackOrigin {
    try await LoopbackOrigin.start { request, respond in
        let key = request.headerFields["Sec-WebSocket-Key"] ?? ""
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept ?? WebSocketHandshake.acceptValue(for: key))\r\n\r\n"
        respond.write(Array(head.utf8) + frames)
        if let delay { respond.after(delay) { respond.close() } }
    }
}

private func task(_ origin: LoopbackOrigin, _ recorder: WebSocketRecorder) throws -> WebSocketTask {
    let session = Session(configuration: .ephemeral, delegate: recorder)
    return try session.webSocketTask(with: HTTPURL(string: "ws://127.0.0.1:\(origin.port)/")!)
}

@Suite("WebSocket tasks against a raw scripted server", .serialized, .timeLimit(.minutes(1)))
struct WebSocketRawServerTests {
    @Test("The RFC 6455 example key gets the example accept value (SHA-1 from OpenSSL)")
    func acceptValue() {
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("A frame sent in the same packet as the 101 is the first message received")
    func frameRightBehindThe101() async throws {
        let origin = try await rawServer(frames: [0x81, 0x05] + Array("early".utf8))
        defer { origin.stop() }
        let webSocket = try task(origin, WebSocketRecorder())
        webSocket.resume()
        #expect(try await webSocket.receive() == .string("early"))
        webSocket.cancel()
    }

    @Test("A wrong Sec-WebSocket-Accept fails the handshake: badServerResponse, no open")
    func wrongAccept() async throws {
        let origin = try await rawServer(accept: "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", frames: [])
        defer { origin.stop() }
        let recorder = WebSocketRecorder()
        let webSocket = try task(origin, recorder)
        webSocket.resume()
        await #expect(throws: SessionError(.badServerResponse)) { try await webSocket.send(.string("x")) }
        try await eventually { recorder.list == ["complete badServerResponse"] }
        #expect(webSocket.error?.detail.contains("Sec-WebSocket-Accept") == true)
    }

    @Test("A masked frame from the server is a protocol error: closed with 1002, badServerResponse")
    func maskedFrame() async throws {
        let mask: [UInt8] = [1, 2, 3, 4]
        let masked = Array("hi".utf8).enumerated().map { $0.element ^ mask[$0.offset % 4] }
        let origin = try await rawServer(frames: [0x81, 0x82] + mask + masked)
        defer { origin.stop() }
        let recorder = WebSocketRecorder()
        let webSocket = try task(origin, recorder)
        webSocket.resume()
        await #expect(throws: SessionError(.badServerResponse)) { try await webSocket.receive() }
        try await eventually { recorder.list.contains("complete badServerResponse") }
        #expect(webSocket.closeCode == .protocolError)
    }

    @Test("A text message that is not UTF-8 closes with 1007")
    func invalidUTF8() async throws {
        let origin = try await rawServer(frames: [0x81, 0x02, 0xC3, 0x28])
        defer { origin.stop() }
        let webSocket = try task(origin, WebSocketRecorder())
        webSocket.resume()
        await #expect(throws: SessionError(.badServerResponse)) { try await webSocket.receive() }
        try await eventually { webSocket.closeCode == .invalidFramePayloadData }
    }

    @Test("Every outstanding ping fails when the connection is lost before its pong")
    func pingsFailOnLoss() async throws {
        let origin = try await rawServer(frames: [], closeAfter: .milliseconds(300))
        defer { origin.stop() }
        let recorder = WebSocketRecorder()
        let webSocket = try task(origin, recorder)
        webSocket.resume()
        let answers = NIOLockedValueBox<[String]>([])
        for number in 1...2 {
            webSocket.sendPing { error in answers.withLockedValue { $0.append("\(number) \(error?.code.description ?? "pong")") } }
        }
        try await eventually { answers.withLockedValue { $0.count } == 2 }
        #expect(answers.withLockedValue { $0 } == ["1 networkConnectionLost", "2 networkConnectionLost"])
        // The close code is recorded after the waiting handlers were answered (on the task's loop).
        try await eventually { webSocket.closeCode == .abnormalClosure }
    }

    @Test("A handshake answered 401 asks the delegate for a credential and opens with it")
    func handshakeWithAuthenticationChallenge() async throws {
        final class Answering: SessionDelegate, WebSocketTaskDelegate, @unchecked Sendable {
            func task(
                _ task: SessionTask, didReceive challenge: AuthenticationChallenge,
                completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
            ) {
                completionHandler(.useCredential(Credential(user: "user", password: "pass", persistence: .none)))
            }
        }
        let origin = try await LoopbackOrigin.start { request, respond in
            guard request.headerFields["Authorization"] == "Basic dXNlcjpwYXNz" else {
                respond.send(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"ws\""], body: "who are you")
                return
            }
            let key = request.headerFields["Sec-WebSocket-Key"] ?? ""
            let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(for: key))\r\n\r\n"
            respond.write(Array(head.utf8) + [0x81, 0x06] + Array("authed".utf8))
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral, delegate: Answering())
        defer { session.finishTasksAndInvalidate() }
        let webSocket = try session.webSocketTask(with: HTTPURL(string: "ws://127.0.0.1:\(origin.port)/")!)
        webSocket.resume()
        #expect(try await webSocket.receive() == .string("authed"))
        #expect(origin.requests.map { $0.headerFields["Authorization"] } == [nil, "Basic dXNlcjpwYXNz"])
        webSocket.cancel()
    }
}
