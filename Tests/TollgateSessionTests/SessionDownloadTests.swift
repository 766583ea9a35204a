import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// Records download messages and reads the file while it exists.
final class DownloadRecorder: SessionDelegate, DataTaskDelegate, DownloadTaskDelegate, @unchecked Sendable {
    private let lock = NIOLock()
    private var _events: [String] = []
    private var _file: [UInt8]?
    private var _path: String?
    private var _written: [Int64] = []
    var becomeDownload = false

    var events: [String] { lock.withLock { _events } }
    var file: [UInt8]? { lock.withLock { _file } }
    var path: String? { lock.withLock { _path } }
    var written: [Int64] { lock.withLock { _written } }

    func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
        lock.withLock { _events.append("response") }
        completionHandler(becomeDownload ? .becomeDownload : .allow)
    }

    func dataTask(_ task: DataTask, didBecome downloadTask: DownloadTask) {
        lock.withLock { _events.append("became \(downloadTask.taskIdentifier != task.taskIdentifier)") }
    }

    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        lock.withLock { _events.append("data") }
    }

    func downloadTask(_ task: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        lock.withLock { _written.append(totalBytesWritten) }
    }

    func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        let bytes = FileManager.default.contents(atPath: location).map { [UInt8]($0) }
        lock.withLock {
            _file = bytes
            _path = location
            _events.append("finished")
        }
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        lock.withLock { _events.append(error.map { "complete \($0.code)" } ?? "complete \(type(of: task))") }
    }
}

@Suite("Download tasks", .timeLimit(.minutes(1)))
struct SessionDownloadTests {
    static let payload = (0..<500_000).map { UInt8($0 % 253) }

    static func origin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { _, respond in respond.send(status: 200, bytes: payload) }
    }

    @Test("A download task writes the body to a temporary file, reports progress, and removes the file after")
    func download() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let recorder = DownloadRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.downloadTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.events.last?.hasPrefix("complete") == true }
        #expect(recorder.events == ["finished", "complete DownloadTask"])
        #expect(recorder.file == Self.payload)
        #expect(recorder.written.last == Int64(Self.payload.count))
        let path = try #require(recorder.path)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("A data task answered becomeDownload hands the rest of the response to a new download task")
    func becomeDownload() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let recorder = DownloadRecorder()
        recorder.becomeDownload = true
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.events.last?.hasPrefix("complete") == true }
        #expect(recorder.events == ["response", "became true", "finished", "complete DownloadTask"])
        #expect(recorder.file == Self.payload)
        #expect(task.state == .completed)
        try await eventually("no tasks left") { session.allTasks.isEmpty }
    }
}
