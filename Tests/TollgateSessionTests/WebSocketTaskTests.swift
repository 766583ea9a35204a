import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateSession
import TollgateTesting

/// Records a WebSocket task's delegate messages, in order.
final class WebSocketRecorder: SessionDelegate, WebSocketTaskDelegate, @unchecked Sendable {
    let events = NIOLockedValueBox<[String]>([])
    func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?) {
        events.withLockedValue { $0.append("open \(`protocol` ?? "-")") }
    }
    func webSocketTask(_ task: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: ByteBuffer?) {
        events.withLockedValue { $0.append("close \(closeCode) \(reason.map { String(buffer: $0) } ?? "-")") }
    }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        events.withLockedValue { $0.append(error.map { "complete \($0.code)" } ?? "complete") }
    }
    var list: [String] { events.withLockedValue { $0 } }
}

/// A session with an in-memory cookie store, recording its tasks' messages.
private func makeSession(_ recorder: WebSocketRecorder, tls: TestPKI? = nil) -> Session {
    var configuration = SessionConfiguration.ephemeral
    configuration.cookieStorage = CookieStorage()
    configuration.httpCookieAcceptPolicy = .always
    configuration.tlsConfiguration = tls?.sessionTLSConfiguration
    return Session(configuration: configuration, delegate: recorder)
}

private func url(_ port: Int, _ path: String = "/echo", scheme: String = "ws") -> HTTPURL {
    HTTPURL(string: "\(scheme)://127.0.0.1:\(port)\(path)")!
}

/// A Python server, and a task to its `path` on a recording session, resumed after `prepare`.
private struct Connected {
    let server: WebSocketPeer.Server
    let recorder: WebSocketRecorder
    let task: WebSocketTask

    static func start(_ path: String = "/echo", prepare: (WebSocketTask) -> Void = { _ in }) async throws -> Connected {
        let server = try await WebSocketPeer.startServer()
        let recorder = WebSocketRecorder()
        do {
            let task = try makeSession(recorder).webSocketTask(with: url(server.port, path))
            prepare(task)
            task.resume()
            return Connected(server: server, recorder: recorder, task: task)
        } catch {
            server.stop()
            throw error
        }
    }

    /// Sends `text` and waits for the echo.
    func roundTrip(_ text: String = "hi") async throws {
        try await task.send(.string(text))
        #expect(try await task.receive() == .string(text))
    }
}

@Suite(
    "WebSocket tasks against Python's websockets server",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: WebSocketPeer.python != nil, "python3 with the websockets package is not installed")
)
struct WebSocketTaskTests {
    @Test("Text and binary messages are echoed, the delegate hears of the open, and closeCode is invalid while open")
    func echo() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let recorder = WebSocketRecorder()
        let task = try makeSession(recorder).webSocketTask(with: url(server.port))
        task.resume()
        try await task.send(.string("héllo"))
        #expect(try await task.receive() == .string("héllo"))
        try await task.send(.data(ByteBuffer(bytes: [0, 1, 2, 255])))
        #expect(try await task.receive() == .data(ByteBuffer(bytes: [0, 1, 2, 255])))
        #expect(task.closeCode == .invalid)
        #expect(task.state == .running)
        #expect(recorder.list == ["open -"])
        #expect(task.response?.status == 101)
        task.cancel(with: .normalClosure, reason: nil)
        try await eventually("complete") { recorder.list.contains("complete") }
    }

    @Test("A message the server sends in three frames is received whole")
    func fragments() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let task = try makeSession(WebSocketRecorder()).webSocketTask(with: url(server.port))
        task.resume()
        try await task.send(.string("fragments"))
        #expect(try await task.receive() == .string("fragmented"))
        task.cancel(with: .normalClosure, reason: nil)
    }

    @Test("Sends and receives made before the handshake completes run in order after it")
    func queuedBeforeHandshake() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let task = try makeSession(WebSocketRecorder()).webSocketTask(with: url(server.port))
        let replies = NIOLockedValueBox<[String]>([])
        for text in ["one", "two", "three"] {
            task.send(.string(text)) { error in if let error { replies.withLockedValue { $0.append("send failed \(error)") } } }
        }
        for _ in 0..<3 {
            task.receive { result in
                replies.withLockedValue { $0.append((try? result.get()).map { "\($0)" } ?? "failed") }
            }
        }
        task.resume()
        try await eventually("three replies") { replies.withLockedValue { $0.count } == 3 }
        #expect(replies.withLockedValue { $0 } == [#"string("one")"#, #"string("two")"#, #"string("three")"#])
        task.cancel(with: .normalClosure, reason: nil)
    }

    @Test("Pong handlers are answered in the order the pings were sent")
    func pingOrder() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let task = try makeSession(WebSocketRecorder()).webSocketTask(with: url(server.port))
        task.resume()
        let answered = NIOLockedValueBox<[String]>([])
        for number in 1...3 {
            task.sendPing { error in answered.withLockedValue { $0.append(error == nil ? "\(number)" : "\(number) failed") } }
        }
        try await eventually("three pongs") { answered.withLockedValue { $0.count } == 3 }
        #expect(answered.withLockedValue { $0 } == ["1", "2", "3"])
        task.cancel(with: .normalClosure, reason: nil)
    }

    @Test("cancel(with:reason:) sends its code and reason; the server's answer ends the task without an error")
    func clientCloseWithCodeAndReason() async throws {
        let connected = try await Connected.start()
        defer { connected.server.stop() }
        let (task, recorder) = (connected.task, connected.recorder)
        try await connected.roundTrip()
        task.cancel(with: .goingAway, reason: ByteBuffer(string: "leaving now"))
        try await eventually("complete") { recorder.list.contains("complete") }
        #expect(recorder.list == ["open -", "close 1001 leaving now", "complete"])  // the server echoes both
        #expect(task.closeCode == .goingAway)
        #expect(task.closeReason == ByteBuffer(string: "leaving now"))
        #expect(task.state == .completed)
        #expect(task.error == nil)
        try await eventually("the server saw the close") { connected.server.closes == ["closed 1001 leaving now"] }
    }

    @Test("The server's close frame is reported with its code and reason; a waiting receive fails")
    func serverClose() async throws {
        let connected = try await Connected.start()
        defer { connected.server.stop() }
        let (task, recorder) = (connected.task, connected.recorder)
        try await task.send(.string("close:4000:all done"))
        await #expect(throws: SessionError(.networkConnectionLost)) { try await task.receive() }
        try await eventually("complete") { recorder.list.contains("complete") }
        #expect(recorder.list == ["open -", "close 4000 all done", "complete"])
        #expect(task.closeCode == WebSocketCloseCode(rawValue: 4000))
        #expect(task.closeReason == ByteBuffer(string: "all done"))
        #expect(task.error == nil)
        await #expect(throws: SessionError(.networkConnectionLost)) { try await task.send(.string("late")) }
    }

    @Test("cancel() sends a close frame without a code and completes with cancelled")
    func cancelWithoutCode() async throws {
        let connected = try await Connected.start()
        defer { connected.server.stop() }
        try await connected.roundTrip()
        connected.task.cancel()
        try await eventually("complete") { connected.recorder.list.contains("complete cancelled") }
        #expect(connected.recorder.list == ["open -", "complete cancelled"])
        #expect(connected.task.closeCode == .noStatusReceived)
        try await eventually("the server saw the close") { connected.server.closes == ["closed 1005 "] }
    }

    @Test("A connection lost without a close frame fails the waiting receive and the task, closeCode 1006")
    func connectionLost() async throws {
        let connected = try await Connected.start()
        defer { connected.server.stop() }
        try await connected.task.send(.string("drop"))
        await #expect(throws: SessionError(.networkConnectionLost)) { try await connected.task.receive() }
        try await eventually("complete") { connected.recorder.list.contains("complete networkConnectionLost") }
        #expect(connected.task.closeCode == .abnormalClosure)
    }

    @Test("A message over maximumMessageSize fails the receive with dataLengthExceedsMaximum and closes with 1009")
    func oversizeMessage() async throws {
        let connected = try await Connected.start { $0.maximumMessageSize = 1000 }
        defer { connected.server.stop() }
        let task = connected.task
        try await task.send(.string("big:1000"))
        #expect(try await task.receive() == .data(ByteBuffer(repeating: UInt8(ascii: "x"), count: 1000)))
        try await task.send(.string("big:5000"))
        await #expect(throws: SessionError(.dataLengthExceedsMaximum)) { try await task.receive() }
        try await eventually("complete") { connected.recorder.list.contains("complete dataLengthExceedsMaximum") }
        #expect(task.closeCode == .messageTooBig)
        try await eventually("the server saw 1009") { connected.server.closes == ["closed 1009 "] }
    }

    @Test("permessage-deflate is offered and agreed: large and fragmented messages travel compressed both ways and arrive whole")
    func compressedMessages() async throws {
        let server = try await WebSocketPeer.startServer(compression: .deflate)
        defer { server.stop() }
        let recorder = WebSocketRecorder()
        let task = try makeSession(recorder).webSocketTask(with: url(server.port))
        task.maximumMessageSize = 4 << 20
        task.resume()
        try await task.send(.string("extensions?"))
        // websockets' default answer: 12-bit windows both ways. A client compressing with a larger
        // window than agreed would send what the server's 4 KiB window cannot decompress.
        let agreed = try await task.receive()
        #expect(agreed == .string("permessage-deflate; server_max_window_bits=12; client_max_window_bits=12"), "\(agreed)")
        #expect(task.usesCompression)
        let text = String(repeating: "all work and no play makes a dull proxy. ", count: 50_000)
        try await task.send(.string(text))
        #expect(try await task.receive() == .string(text))
        // 10 000 bytes that do not repeat, sent twice: the second message could be one match 10 000
        // bytes back into the first, which the server's 4 KiB window no longer holds — a client
        // honouring the window never refers that far.
        let noise = ByteBuffer(bytes: scrambled(10_000))
        for _ in 0..<2 {
            try await task.send(.data(noise))
            #expect(try await task.receive() == .data(noise))
        }
        try await task.send(.string("fragments"))
        #expect(try await task.receive() == .string("fragmented"))
        // 2 MiB of one byte: a few KiB on the wire, made whole on arrival.
        try await task.send(.string("big:2097152"))
        #expect(try await task.receive() == .data(ByteBuffer(repeating: UInt8(ascii: "x"), count: 2 << 20)))
        for round in 0..<3 { try await roundTrip(task, "again \(round)") }
        task.cancel(with: .normalClosure, reason: nil)
        try await eventually("the server saw 1000") { server.closes == ["closed 1000 "] }
    }

    @Test("A server that asks for no context takeover both ways and small windows is followed: every message still arrives")
    func strictCompression() async throws {
        let server = try await WebSocketPeer.startServer(compression: .strict)
        defer { server.stop() }
        let task = try makeSession(WebSocketRecorder()).webSocketTask(with: url(server.port))
        task.resume()
        try await task.send(.string("extensions?"))
        let answer = try await task.receive()
        guard case .string(let agreed) = answer else {
            Issue.record("\(answer)")
            return
        }
        for parameter in ["server_no_context_takeover", "client_no_context_takeover", "server_max_window_bits=10", "client_max_window_bits=9"] {
            #expect(agreed.contains(parameter), "\(agreed)")
        }
        for round in 0..<5 { try await roundTrip(task, String(repeating: "round \(round) ", count: 2_000)) }
        // The same 300 bytes twice: kept from the first message, the window would let the second be
        // a match the server (told client_no_context_takeover, so it starts afresh) cannot resolve.
        let short = ByteBuffer(bytes: scrambled(300))
        for _ in 0..<2 {
            try await task.send(.data(short))
            #expect(try await task.receive() == .data(short))
        }
    }

    @Test("A compressed message over maximumMessageSize is refused as it is decompressed: dataLengthExceedsMaximum and 1009")
    func compressedBomb() async throws {
        let server = try await WebSocketPeer.startServer(compression: .deflate)
        defer { server.stop() }
        let recorder = WebSocketRecorder()
        let task = try makeSession(recorder).webSocketTask(with: url(server.port))
        task.maximumMessageSize = 64 << 10
        task.resume()
        // 64 MiB of one byte: about 64 KiB compressed — a frame the decoder takes.
        try await task.send(.string("big:67108864"))
        await #expect(throws: SessionError(.dataLengthExceedsMaximum)) { try await task.receive() }
        try await eventually("complete") { recorder.list.contains("complete dataLengthExceedsMaximum") }
        #expect(task.closeCode == .messageTooBig)
        try await eventually("the server saw 1009") { server.closes == ["closed 1009 "] }
    }

    @Test("With the session's webSocketCompression off nothing is offered, and messages travel as they are")
    func compressionOff() async throws {
        let server = try await WebSocketPeer.startServer(compression: .deflate)
        defer { server.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.webSocketCompression = false
        let task = try Session(configuration: configuration).webSocketTask(with: url(server.port))
        task.resume()
        try await task.send(.string("extensions?"))
        #expect(try await task.receive() == .string("-"))
        #expect(!task.usesCompression)
        try await roundTrip(task, "plain")
    }

    @Test("The handshake follows a redirect, stores the cookie it sets and sends it on the redirected handshake")
    func redirectAndCookie() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let recorder = WebSocketRecorder()
        let session = makeSession(recorder)
        let task = try session.webSocketTask(with: url(server.port, "/redirect"))
        task.resume()
        try await task.send(.string("cookie?"))
        #expect(try await task.receive() == .string("visited=yes"))
        #expect(task.currentRequest?.url.pathAndQuery == "/echo")
        task.cancel(with: .normalClosure, reason: nil)
        // The cookie stays in the session's store for the next handshake.
        let next = try session.webSocketTask(with: url(server.port))
        next.resume()
        try await next.send(.string("cookie?"))
        #expect(try await next.receive() == .string("visited=yes"))
        next.cancel(with: .normalClosure, reason: nil)
    }

    @Test("A handshake the server refuses fails the task with badServerResponse, and waiting calls fail with it")
    func refusedHandshake() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let recorder = WebSocketRecorder()
        let task = try makeSession(recorder).webSocketTask(with: url(server.port, "/refuse"))
        task.resume()
        await #expect(throws: SessionError(.badServerResponse)) { try await task.receive() }
        try await eventually("complete") { recorder.list.contains("complete badServerResponse") }
        #expect(task.response?.status == 403)
        #expect(task.closeCode == .invalid)
        #expect(!recorder.list.contains { $0.hasPrefix("open") })
    }

    @Test("wss: the handshake goes over TLS, trusted through the session's trust settings")
    func secureEcho() async throws {
        let pki = try TestPKI()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-wss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try pki.writeServerFiles(in: directory)
        let server = try await WebSocketPeer.startServer(certificate: files.certificate, key: files.key)
        defer { server.stop() }
        let task = try makeSession(WebSocketRecorder(), tls: pki).webSocketTask(with: url(server.port, scheme: "wss"))
        task.resume()
        try await task.send(.string("secure"))
        #expect(try await task.receive() == .string("secure"))
        task.cancel(with: .normalClosure, reason: nil)
        // Untrusted without the test CA.
        let untrusted = try makeSession(WebSocketRecorder()).webSocketTask(with: url(server.port, scheme: "wss"))
        untrusted.resume()
        await #expect(throws: SessionError(.serverCertificateUntrusted)) { try await untrusted.receive() }
    }
}

/// Sends `text` on `task` and expects it back.
private func roundTrip(_ task: WebSocketTask, _ text: String) async throws {
    try await task.send(.string(text))
    #expect(try await task.receive() == .string(text))
}

/// `count` bytes with no repeats a compressor could use nearby (a linear congruential sequence).
private func scrambled(_ count: Int) -> [UInt8] {
    var state: UInt32 = 0x9E37_79B9
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}
