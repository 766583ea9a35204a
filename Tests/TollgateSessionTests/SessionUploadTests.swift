import Foundation
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Uploads", .timeLimit(.minutes(1)))
struct SessionUploadTests {
    static func echoOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            let framing = request.headerFields["Transfer-Encoding"] ?? "length \(request.headerFields["Content-Length"] ?? "-")"
            respond.send(status: 200, body: "\(request.body.count) \(framing)")
        }
    }

    @Test("An upload from memory arrives whole and progress adds up to its size")
    func fromMemory() async throws {
        let origin = try await Self.echoOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let payload = ByteBuffer(bytes: (0..<300_000).map { UInt8($0 % 251) })
        let task = try session.uploadTask(with: Request(method: .put, url: origin.url()), from: payload)
        #expect(task.countOfBytesExpectedToSend == 0)
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.body == "300000 length 300000")
        #expect(recorder.sentTotals.last == 300_000)
        #expect(task.countOfBytesSent == 300_000)
        #expect(task.countOfBytesExpectedToSend == 300_000)
        #expect(origin.requests.first?.body == Array(payload.readableBytesView))
    }

    @Test("An upload from a file is read in chunks and reported as it goes")
    func fromFile() async throws {
        let origin = try await Self.echoOrigin()
        defer { origin.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-upload-\(UUID()).bin").path
        let bytes = [UInt8](repeating: 7, count: 200_000)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.uploadTask(with: Request(method: .post, url: origin.url()), fromFile: path)
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.body == "200000 length 200000")
        #expect(recorder.sentTotals.count >= 3)
        #expect(recorder.sentTotals.last == 200_000)
    }

    @Test("A streamed upload asks needNewBodyStream and is sent chunked")
    func streamed() async throws {
        let origin = try await Self.echoOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.bodyStream = {
            BodyStream(pieces: [ByteBuffer(string: "hello "), ByteBuffer(string: "streamed "), ByteBuffer(string: "world")])
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.uploadTask(withStreamedRequest: Request(method: .post, url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.events.first == "need-body")
        #expect(recorder.body == "20 chunked")
        #expect(origin.requests.first?.bodyText == "hello streamed world")
        #expect(task.countOfBytesExpectedToSend == -1)
    }

    @Test("A body stream written over time with back-pressure arrives in order")
    func streamedOverTime() async throws {
        let origin = try await Self.echoOrigin()
        defer { origin.stop() }
        let stream = BodyStream()
        let recorder = EventRecorder()
        recorder.bodyStream = { stream }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.uploadTask(withStreamedRequest: Request(method: .post, url: origin.url()))
        task.resume()
        for piece in ["a", "b", "c", "d"] {
            try await stream.write(ByteBuffer(string: piece)).get()
        }
        stream.finish()
        try await eventually("done") { recorder.completed }
        #expect(origin.requests.first?.bodyText == "abcd")
    }

    @Test("A streamed upload with no stream from the delegate fails with requestBodyStreamExhausted")
    func noStream() async throws {
        let origin = try await Self.echoOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.uploadTask(withStreamedRequest: Request(method: .post, url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.error?.code == .requestBodyStreamExhausted)
        #expect(origin.requestCount == 0)
    }
}
