import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// Answers becomeStream to every response and keeps the stream task and the stream events.
private final class StreamEverything: SessionDelegate, DataTaskDelegate, StreamTaskDelegate, @unchecked Sendable {
    let stream = NIOLockedValueBox<StreamTask?>(nil)
    let events = NIOLockedValueBox<[String]>([])
    /// Answers after this long (the body and the end arrive meanwhile and are held); nil: at once.
    let answerAfter: TimeAmount?
    init(answerAfter: TimeAmount? = nil) { self.answerAfter = answerAfter }

    func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
        guard let answerAfter else { return completionHandler(.becomeStream) }
        task.eventLoop.scheduleTask(in: answerAfter) { completionHandler(.becomeStream) }
    }
    func dataTask(_ task: DataTask, didBecome streamTask: StreamTask) { stream.withLockedValue { $0 = streamTask } }
    func streamTask(_ task: StreamTask, writeClosedFor: Void) { events.withLockedValue { $0.append("write-closed") } }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        events.withLockedValue { $0.append(error.map { "complete \($0.code)" } ?? "complete") }
    }
}

@Suite("becomeStream for responses other than 101", .serialized, .timeLimit(.minutes(1)))
struct BecomeStreamTests {
    private func streamOf(_ origin: LoopbackOrigin, _ recorder: StreamEverything) async throws -> (StreamTask, Session) {
        let session = Session(configuration: .ephemeral, delegate: recorder)
        try session.dataTask(with: Request(url: origin.url("/feed"))).resume()
        try await eventually("the stream task") { recorder.stream.withLockedValue { $0 } != nil }
        return (try #require(recorder.stream.withLockedValue { $0 }), session)
    }

    /// Reads until EOF (or `count` bytes); the text.
    private func read(_ stream: StreamTask, upTo count: Int = .max) async throws -> (String, Bool) {
        var text = ""
        while text.utf8.count < count {
            let read = try await stream.readData(ofMinLength: 1, maxLength: 100, timeout: .seconds(5))
            text += read.data.map { String(buffer: $0) } ?? ""
            if read.atEOF { return (text, true) }
        }
        return (text, false)
    }

    @Test(
        "A 200 kept alive becomes a stream: the body first, then the connection both ways; the stream carries the request and response",
        arguments: [nil, TimeAmount.milliseconds(200)]
    )
    func keptAliveResponse(answerAfter: TimeAmount?) async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.echoRawBytes()
            respond.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")
        }
        defer { origin.stop() }
        // At once (the body is still in the decoder) and late (the body is held by the task).
        let recorder = StreamEverything(answerAfter: answerAfter)
        let (stream, session) = try await streamOf(origin, recorder)
        defer { session.invalidateAndCancel() }
        #expect(stream.response?.status == 200)
        #expect(stream.originalRequest?.url.pathAndQuery == "/feed")
        #expect(try await read(stream, upTo: 10).0 == "0123456789")
        try await stream.write(ByteBuffer(string: "ping"), timeout: .seconds(5))
        #expect(try await read(stream, upTo: 4).0 == "ping")
    }

    @Test("A response whose server closes after the body becomes a stream that reads the body, then EOF, and cannot write")
    func closedAfterTheBody() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Connection": "close"], body: "last words")
            respond.close()
        }
        defer { origin.stop() }
        // Answered late: the body and the close arrive while the delegate decides.
        let recorder = StreamEverything(answerAfter: .milliseconds(200))
        let (stream, session) = try await streamOf(origin, recorder)
        defer { session.invalidateAndCancel() }
        let (text, eof) = try await read(stream)
        #expect(text == "last words")
        #expect(eof)
        await #expect(throws: SessionError.self) { try await stream.write(ByteBuffer(string: "x"), timeout: .seconds(1)) }
        try await eventually("complete") { recorder.events.withLockedValue { $0.contains("complete") } }
        #expect(recorder.events.withLockedValue { $0 }.contains("write-closed"))
    }

    @Test("A chunked response cannot become a stream: the task fails with unsupportedOperation")
    func chunkedRefused() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        }
        defer { origin.stop() }
        let recorder = StreamEverything()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        try session.dataTask(with: Request(url: origin.url("/chunks"))).resume()
        try await eventually("complete") { recorder.events.withLockedValue { !$0.isEmpty } }
        #expect(recorder.events.withLockedValue { $0 } == ["complete unsupportedOperation"])
        #expect(recorder.stream.withLockedValue { $0 } == nil)
    }
}
