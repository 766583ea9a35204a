import NIOConcurrencyHelpers
import NIOCore
import TollgateHTTP
import Testing
@testable import TollgateSession
import TollgateTesting

final class StreamRecorder: SessionDelegate, StreamTaskDelegate, @unchecked Sendable {
    let events = NIOLockedValueBox<[String]>([])
    func streamTask(_ task: StreamTask, readClosedFor: Void) { events.withLockedValue { $0.append("read-closed") } }
    func streamTask(_ task: StreamTask, writeClosedFor: Void) { events.withLockedValue { $0.append("write-closed") } }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        events.withLockedValue { $0.append(error.map { "complete \($0.code)" } ?? "complete") }
    }
}

extension StreamTask {
    func read(min: Int = 1, max: Int = 65536, timeout: Duration = .seconds(5)) async throws -> (String?, Bool) {
        try await withCheckedThrowingContinuation { continuation in
            readData(ofMinLength: min, maxLength: max, timeout: timeout) { bytes, eof, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: (bytes.map { String(buffer: $0) }, eof)) }
            }
        }
    }

    func write(_ text: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            write(ByteBuffer(string: text), timeout: .seconds(5)) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }
}

@Suite("Stream tasks", .timeLimit(.minutes(1)))
struct SessionStreamTaskTests {
    @Test("A stream task writes and reads bytes, and half-close works both ways")
    func echoAndHalfClose() async throws {
        let server = try await LoopbackEchoServer.start()
        defer { server.stop() }
        let recorder = StreamRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        try await task.write("hello")
        let (echo, eof) = try await task.read(min: 5)
        #expect(echo == "hello")
        #expect(!eof)
        task.closeWrite()
        // The server sees our EOF, says goodbye and closes its side: we read it, then EOF.
        var rest = ""
        var atEOF = false
        while !atEOF {
            let (bytes, end) = try await task.read()
            rest += bytes ?? ""
            atEOF = end
        }
        #expect(rest == "bye")
        try await eventually("complete") { recorder.events.withLockedValue { $0.contains("complete") } }
        let events = recorder.events.withLockedValue { $0 }
        #expect(events.contains("write-closed"))
        #expect(events.contains("read-closed"))
        #expect(server.receivedBytes == Array("hello".utf8))
    }

    @Test("A read with a timeout fails with timedOut and leaves later data for the next read")
    func readTimeout() async throws {
        let server = try await LoopbackEchoServer.start()
        defer { server.stop() }
        let session = Session(configuration: .ephemeral)
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        await #expect(throws: SessionError(.timedOut)) { _ = try await task.read(timeout: .milliseconds(200)) }
        try await task.write("later")
        let (bytes, _) = try await task.read(min: 5)
        #expect(bytes == "later")
        task.cancel()
    }

    @Test("A stream task to a closed port fails with cannotConnectToHost")
    func cannotConnect() async throws {
        let port = try await closedPort()
        let recorder = StreamRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.streamTask(withHostName: "127.0.0.1", port: port)
        task.resume()
        try await eventually("complete") { !recorder.events.withLockedValue { $0 }.isEmpty }
        #expect(recorder.events.withLockedValue { $0 } == ["complete cannotConnectToHost"])
        await #expect(throws: SessionError.self) { _ = try await task.read() }
    }
}

/// Answers becomeStream to a 101 and keeps the stream task it gets.
final class UpgradeRecorder: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
    let stream = NIOLockedValueBox<StreamTask?>(nil)
    /// What a read issued at once in `didBecome` returned (the bytes that followed the 101).
    let firstRead = NIOLockedValueBox<String?>(nil)
    func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
        completionHandler(response.status == 101 ? .becomeStream : .allow)
    }
    func dataTask(_ task: DataTask, didBecome streamTask: StreamTask) {
        let firstRead = self.firstRead
        streamTask.readData(ofMinLength: 1, maxLength: 5, timeout: .seconds(5)) { bytes, eof, error in
            firstRead.withLockedValue { $0 = bytes.map { String(buffer: $0) } ?? "nil eof=\(eof) \(String(describing: error))" }
        }
        stream.withLockedValue { $0 = streamTask }
    }
}

@Suite("Upgrades", .timeLimit(.minutes(1)))
struct SessionUpgradeTests {
    @Test("A 101 answered with becomeStream gives a stream task on the same connection, bytes both ways")
    func upgradeBecomesStream() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.echoRawBytes()
            respond.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nearly")
        }
        defer { origin.stop() }
        let recorder = UpgradeRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let request = Request(url: origin.url("/ws"), headerFields: ["Connection": "Upgrade", "Upgrade": "websocket"])
        let task = try session.dataTask(with: request)
        task.resume()
        try await eventually("stream") { recorder.stream.withLockedValue { $0 } != nil }
        let stream = try #require(recorder.stream.withLockedValue { $0 })
        #expect(stream.response?.status == 101)
        #expect(stream.originalRequest?.url.pathAndQuery == "/ws")
        #expect(stream.currentRequest?.url.pathAndQuery == "/ws")
        // Bytes the server sent right behind the 101 are not lost, and a read issued at once gets them.
        try await eventually("first read") { recorder.firstRead.withLockedValue { $0 } != nil }
        #expect(recorder.firstRead.withLockedValue { $0 } == "early")
        try await stream.write("ping")
        let (echo, _) = try await stream.read(min: 4)
        #expect(echo == "ping")
        #expect(task.state == .completed)
        #expect(origin.connectionCount == 1)
        stream.cancel()
    }
}
