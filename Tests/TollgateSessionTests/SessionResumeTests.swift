import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// Records what a resumable download reports, and keeps a copy of its file.
final class ResumeRecorder: SessionDelegate, DownloadTaskDelegate, @unchecked Sendable {
    private let lock = NIOLock()
    private var _resumedAt: [(Int64, Int64)] = []
    private var _written: [Int64] = []
    private var _file: [UInt8]?
    private var _error: SessionError?
    private var completion: CheckedContinuation<Void, Never>?
    private var done = false
    /// Called (once) with the task at the first didWriteData.
    var onFirstWrite: (@Sendable (DownloadTask) -> Void)?

    var resumedAt: [(Int64, Int64)] { lock.withLock { _resumedAt } }
    var written: [Int64] { lock.withLock { _written } }
    var file: [UInt8]? { lock.withLock { _file } }
    var error: SessionError? { lock.withLock { _error } }

    func downloadTask(_ task: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        let first = lock.withLock { () -> Bool in
            _written.append(totalBytesWritten)
            return _written.count == 1
        }
        if first { onFirstWrite?(task) }
    }

    func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        lock.withLock { _resumedAt.append((fileOffset, expectedTotalBytes)) }
    }

    func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        let bytes = FileManager.default.contents(atPath: location).map { [UInt8]($0) }
        lock.withLock { _file = bytes }
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            _error = error
            done = true
            defer { completion = nil }
            return completion
        }
        waiter?.resume()
    }

    /// Waits for didCompleteWithError.
    func completed() async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if done { return true }
                completion = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

@Suite("Downloads that resume: resume data, Range with If-Range, and the cache", .timeLimit(.minutes(1)))
struct SessionResumeTests {
    static let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    func session(_ delegate: ResumeRecorder, cache: CacheFixture? = nil) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = cache?.cache
        return Session(configuration: configuration, delegate: delegate)
    }

    /// Runs a download to its end on a fresh recorder.
    func download(_ make: (Session) throws -> DownloadTask, cache: CacheFixture? = nil) async throws -> (ResumeRecorder, DownloadTask) {
        let recorder = ResumeRecorder()
        let session = session(recorder, cache: cache)
        defer { session.finishTasksAndInvalidate() }
        let task = try make(session)
        task.resume()
        await recorder.completed()
        return (recorder, task)
    }

    @Test("A cut connection fails with resume data; the resumed task asks for the rest and the file is byte-exact")
    func resumeAfterCut() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        origin.cutNext(after: 100_000)
        let (first, _) = try await download { try $0.downloadTask(with: Request(url: origin.url)) }
        #expect(first.error?.code == .networkConnectionLost)
        let data = try #require(first.error?.resumeData)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["format"] as? String == "tollgate-resume-data")
        #expect(json["version"] as? Int == 1)
        #expect(json["bytesReceived"] as? Int == 100_000)
        let partial = try #require(json["partialFile"] as? String)
        #expect(FileManager.default.fileExists(atPath: partial))

        let (second, _) = try await download { try $0.downloadTask(withResumeData: data) }
        #expect(second.error == nil)
        #expect(origin.rangesAsked.last == "bytes=100000-")
        #expect(second.resumedAt.map(\.0) == [100_000])
        #expect(second.resumedAt.map(\.1) == [300_000])
        #expect(second.written.first.map { $0 > 100_000 } == true)
        #expect(second.file == Self.body)
        #expect(!FileManager.default.fileExists(atPath: partial))
    }

    @Test("cancel(byProducingResumeData:) hands out resume data mid-download, and a completion handler resume works")
    func cancelProducingResumeData() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        origin.cutNext(after: 50_000, stall: true)
        let produced = NIOLockedValueBox<Data?>(nil)
        let recorder = ResumeRecorder()
        let gotData = AsyncStream.makeStream(of: Void.self)
        recorder.onFirstWrite = { task in
            Task {
                let data = await task.cancelByProducingResumeData()
                produced.withLockedValue { $0 = data }
                gotData.continuation.yield()
            }
        }
        let session = session(recorder)
        let task = try session.downloadTask(with: Request(url: origin.url))
        task.resume()
        await recorder.completed()
        for await _ in gotData.stream { break }
        #expect(recorder.error?.code == .cancelled)
        let data = try #require(produced.withLockedValue { $0 })
        #expect(recorder.error?.resumeData == data)

        let result = NIOLockedValueBox<([UInt8]?, Int?, SessionError?)>((nil, nil, nil))
        let finished = AsyncStream.makeStream(of: Void.self)
        let resumed = try session.downloadTask(withResumeData: data) { path, response, error in
            result.withLockedValue { $0 = (path.flatMap { FileManager.default.contents(atPath: $0) }.map { [UInt8]($0) }, response?.status, error) }
            finished.continuation.yield()
        }
        resumed.resume()
        for await _ in finished.stream { break }
        let (file, status, error) = result.withLockedValue { $0 }
        #expect(error == nil)
        #expect(status == 206)
        #expect(file == Self.body)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let received = try #require(json["bytesReceived"] as? Int)
        #expect(received > 0 && received <= 50_000)
        #expect(origin.rangesAsked.last == "bytes=\(received)-")
        session.finishTasksAndInvalidate()
    }

    @Test("A changed validator: the server sends the whole 200, the download starts over at offset 0")
    func changedValidatorRestarts() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        origin.cutNext(after: 120_000)
        let (first, _) = try await download { try $0.downloadTask(with: Request(url: origin.url)) }
        let data = try #require(first.error?.resumeData)
        let changed = Self.body.reversed() + [1, 2, 3]
        origin.change(to: Array(changed))
        let (second, task) = try await download { try $0.downloadTask(withResumeData: data) }
        #expect(second.error == nil)
        #expect(task.response?.status == 200)
        #expect(second.resumedAt.map(\.0) == [0])
        #expect(second.file == Array(changed))
    }

    @Test("Resume data that is corrupt, of another version, or whose file is gone fails clearly")
    func badResumeData() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        #expect(throws: SessionError(.cannotResumeDownload)) { try session.downloadTask(withResumeData: Data("not resume data".utf8)) }

        origin.cutNext(after: 10_000)
        let (first, _) = try await download { try $0.downloadTask(with: Request(url: origin.url)) }
        let data = try #require(first.error?.resumeData)
        var json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        json["version"] = 99
        let future = try JSONSerialization.data(withJSONObject: json)
        do {
            _ = try session.downloadTask(withResumeData: future)
            Issue.record("version 99 was accepted")
        } catch {
            #expect(error.code == .cannotResumeDownload)
            #expect(error.detail.contains("version 99"))
        }
        DownloadTask.discard(resumeData: data)
        #expect(!FileManager.default.fileExists(atPath: try #require(json["partialFile"] as? String)))
        do {
            _ = try session.downloadTask(withResumeData: data)
            Issue.record("resume data without its file was accepted")
        } catch {
            #expect(error.code == .cannotResumeDownload)
            #expect(error.detail.contains("is gone"))
        }
    }

    @Test("No resume data when the server takes no byte ranges")
    func noRangesNoResumeData() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        origin.acceptRanges(false)
        origin.cutNext(after: 10_000)
        let (first, _) = try await download { try $0.downloadTask(with: Request(url: origin.url)) }
        #expect(first.error?.code == .networkConnectionLost)
        #expect(first.error?.resumeData == nil)
    }

    @Test("A completed download is stored, and reports stored only once the entry committed")
    func downloadIsStored() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let cache = try CacheFixture()
        let (_, first) = try await download({ try $0.downloadTask(with: Request(url: origin.url)) }, cache: cache)
        #expect(first.cacheOutcome?.stored == true)
        let (again, second) = try await download({ try $0.downloadTask(with: Request(url: origin.url)) }, cache: cache)
        #expect(second.cacheOutcome?.isHit == true)
        #expect(again.file == Self.body)
        #expect(origin.requestCount == 1)

        origin.cutNext(after: 5_000)
        let other = try CacheFixture()
        let (cut, task) = try await download({ try $0.downloadTask(with: Request(url: origin.url)) }, cache: other)
        #expect(cut.error != nil)
        #expect(task.cacheOutcome?.stored == false)
        // The cut left its partial file for resume data this test does not use.
        if let data = cut.error?.resumeData { DownloadTask.discard(resumeData: data) }
    }

    @Test("A cut download resumed through the cache leaves a complete entry (pieces combined)")
    func resumedThroughCacheIsCombined() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let cache = try CacheFixture()
        origin.cutNext(after: 200_000)
        let (first, _) = try await download({ try $0.downloadTask(with: Request(url: origin.url)) }, cache: cache)
        let data = try #require(first.error?.resumeData)
        let key = CacheKey(url: origin.url)
        try await eventually { cache.cache.store.partialContent(for: key)?.covered == [0..<200_000] }
        let (second, task) = try await download({ try $0.downloadTask(withResumeData: data) }, cache: cache)
        #expect(second.file == Self.body)
        #expect(task.cacheOutcome?.stored == true)
        let entry = try #require(try cache.cache.store.lookup(key, requestHeaders: HeaderFields()))
        var stored = try entry.body.readAll()
        #expect(stored.readBytes(length: stored.readableBytes) == Self.body)
        #expect(entry.response.status == 200)
    }
}
