import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// The delegate of a background session: what its tasks report, and the session's own events.
final class BackgroundRecorder: SessionDelegate, DownloadTaskDelegate, DataTaskDelegate, @unchecked Sendable {
    struct Seen {
        var resumedAt: [Int64] = []
        var files: [Int: [UInt8]] = [:]
        var completed: [Int: SessionError?] = [:]
        var finishedEvents = 0
        var redirectsAsked = 0
        var responsesAsked = 0
        var waitingForConnectivity = 0
        var invalidated = false
    }

    let seen = NIOLockedValueBox(Seen())
    /// Called (once per task) at a download's first didWriteData.
    var onFirstWrite: (@Sendable (DownloadTask) -> Void)?

    func downloadTask(_ task: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        if totalBytesWritten == bytesWritten { onFirstWrite?(task) }
    }

    func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        seen.withLockedValue { $0.resumedAt.append(fileOffset) }
    }

    func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        let bytes = FileManager.default.contents(atPath: location).map { [UInt8]($0) } ?? []
        seen.withLockedValue { $0.files[task.taskIdentifier] = bytes }
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        seen.withLockedValue { $0.completed[task.taskIdentifier] = error }
    }

    func task(
        _ task: SessionTask, willPerformHTTPRedirection response: HTTPResponseHead, newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        seen.withLockedValue { $0.redirectsAsked += 1 }
        completionHandler(.deliverRedirectResponse)
    }

    func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
        seen.withLockedValue { $0.responsesAsked += 1 }
        completionHandler(.allow)
    }

    func taskIsWaitingForConnectivity(_ task: SessionTask) {
        seen.withLockedValue { $0.waitingForConnectivity += 1 }
    }

    func sessionDidFinishEvents(forBackgroundSession session: Session) {
        seen.withLockedValue { $0.finishedEvents += 1 }
    }

    func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        seen.withLockedValue { $0.invalidated = true }
    }
}

@Suite("Background sessions: tasks recorded, picked up again, and the seeds' rules", .timeLimit(.minutes(1)))
struct BackgroundSessionTests {
    static let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }

    /// A temporary directory for the sessions' stores, and a fresh identifier.
    struct Place {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-bg-\(UUID().uuidString)").path
        let identifier = "test.\(UUID().uuidString)"

        func session(_ delegate: BackgroundRecorder, _ change: (inout SessionConfiguration) -> Void = { _ in }) -> Session {
            var configuration = SessionConfiguration.background(identifier: identifier)
            configuration.backgroundDirectory = directory
            change(&configuration)
            return Session(configuration: configuration, delegate: delegate)
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test("A download detached mid-transfer is picked up by a session created again: same identifier and description, resumed from its offset, byte-exact, then didFinishEvents")
    func reattachAndResume() async throws {
        let place = Place()
        defer { place.remove() }
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        origin.cutNext(after: 150_000, stall: true)
        let first = BackgroundRecorder()
        let session = place.session(first)
        let task = try session.downloadTask(with: Request(url: origin.url))
        task.taskDescription = "artifact"
        task.resume()
        let identifier = task.taskIdentifier
        // The origin stalls after 150 000 bytes: wait until they are in the session's partial file.
        try await eventually("the partial file holds the bytes sent") {
            session.background?.record(identifier)?.partialFile.flatMap(FileSize.of) == 150_000
        }
        await session.detachBackgroundTasks()
        #expect(first.seen.withLockedValue { $0.completed.isEmpty })
        try await eventually("didBecomeInvalid") { first.seen.withLockedValue { $0.invalidated } }

        let second = BackgroundRecorder()
        let again = place.session(second)
        defer { again.finishTasksAndInvalidate() }
        #expect(again.backgroundError == nil)
        let picked = try #require(again.allTasks.first as? DownloadTask)
        #expect(again.allTasks.count == 1)
        #expect(picked.taskIdentifier == identifier)
        #expect(picked.taskDescription == "artifact")
        try await eventually("the picked-up download completes") { second.seen.withLockedValue { $0.completed[identifier] != nil } }
        let seen = second.seen.withLockedValue { $0 }
        #expect(seen.completed[identifier] == .some(nil))
        #expect(seen.resumedAt == [150_000])
        #expect(origin.rangesAsked.last == "bytes=150000-")
        #expect(seen.files[identifier] == Self.body)
        try await eventually("didFinishEvents") { second.seen.withLockedValue { $0.finishedEvents } == 1 }
        // Completed: the record is gone, and a third session finds nothing.
        #expect(again.background?.record(identifier) == nil)
    }

    @Test("A picked-up download whose file already holds the whole body asks again for its last byte (not a range past the end), and the file stays byte-exact")
    func wholeFileAsksForTheLastByte() async throws {
        let place = Place()
        defer { place.remove() }
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        // What a process killed after the last byte, before the end was delivered, leaves behind.
        let store = try BackgroundTaskStore(root: place.directory, identifier: place.identifier)
        let partial = store.newFilePath("download", task: 3)
        try Data(Self.body).write(to: URL(fileURLWithPath: partial))
        let request = HTTPRequestHead(method: .get, url: origin.url)
        var record = BackgroundTaskRecord(identifier: 3, kind: .download, request: request)
        record.state = .running
        record.partialFile = partial
        record.expectedTotalBytes = Int64(Self.body.count)
        record.response = .init(
            status: 200, fields: [["ETag", origin.etag]], request: DownloadResumeData.RequestRecord(request),
            validator: origin.etag, acceptsRanges: true
        )
        store.put(record)
        store.close()

        let recorder = BackgroundRecorder()
        let session = place.session(recorder)
        defer { session.finishTasksAndInvalidate() }
        try await eventually("it completes") { recorder.seen.withLockedValue { $0.completed[3] != nil } }
        let seen = recorder.seen.withLockedValue { $0 }
        #expect(seen.completed[3] == .some(nil))
        #expect(origin.rangesAsked == ["bytes=\(Self.body.count - 1)-"])
        #expect(seen.resumedAt == [Int64(Self.body.count - 1)])
        #expect(seen.files[3] == Self.body)
    }

    @Test("A task created but never resumed is picked up suspended; a new task's identifier follows the picked-up ones")
    func suspendedStaysSuspended() async throws {
        let place = Place()
        defer { place.remove() }
        let session = place.session(BackgroundRecorder())
        let url = try #require(HTTPURL(string: "http://127.0.0.1:9/never"))
        let task = try session.downloadTask(with: Request(url: url))
        let begin = Date(timeIntervalSince1970: 4_000_000_000)
        task.earliestBeginDate = begin
        await session.detachBackgroundTasks()

        let again = place.session(BackgroundRecorder())
        defer { again.invalidateAndCancel() }
        let picked = try #require(again.allTasks.first)
        #expect(picked.state == .suspended)
        #expect(picked.earliestBeginDate == begin)
        #expect(picked.originalRequest?.url == url)
        let next = try again.downloadTask(with: Request(url: url))
        #expect(next.taskIdentifier > picked.taskIdentifier)
    }

    @Test("Data, stream and WebSocket tasks and uploads from memory are refused with backgroundTaskNotSupported")
    func refusedKinds() throws {
        let place = Place()
        defer { place.remove() }
        let session = place.session(BackgroundRecorder())
        defer { session.invalidateAndCancel() }
        let url = try #require(HTTPURL(string: "http://127.0.0.1:9/"))
        #expect(throws: SessionError(.backgroundTaskNotSupported)) { try session.dataTask(with: Request(url: url)) }
        #expect(throws: SessionError(.backgroundTaskNotSupported)) { try session.streamTask(withHostName: "127.0.0.1", port: 9) }
        #expect(throws: SessionError(.backgroundTaskNotSupported)) { try session.webSocketTask(with: Request(url: url)) }
        #expect(throws: SessionError(.backgroundTaskNotSupported)) {
            try session.uploadTask(with: Request(method: .post, url: url), from: ByteBuffer(string: "x"))
        }
        #expect(throws: SessionError(.backgroundTaskNotSupported)) { try session.uploadTask(withStreamedRequest: Request(method: .post, url: url)) }
        // Download tasks are what a background session is for.
        _ = try session.downloadTask(with: Request(url: url))
    }

    @Test("An upload's file is copied when the task is created: changing the original afterwards changes nothing; its response is not asked about")
    func uploadCopiesItsFile() async throws {
        let place = Place()
        defer { place.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "got \(request.bodyText)")
        }
        defer { origin.stop() }
        let original = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)").path
        try Data("first version".utf8).write(to: URL(fileURLWithPath: original))
        let recorder = BackgroundRecorder()
        let session = place.session(recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = try session.uploadTask(with: Request(method: .post, url: origin.url("/up")), fromFile: original)
        try Data("changed".utf8).write(to: URL(fileURLWithPath: original))
        try? FileManager.default.removeItem(atPath: original)
        let copy = try #require(session.background?.record(task.taskIdentifier)?.uploadFile)
        #expect(copy.hasPrefix(place.directory))
        task.resume()
        try await eventually("the upload completes") { task.state == .completed }
        #expect(task.error == nil)
        #expect(origin.requests.first?.bodyText == "first version")
        #expect(recorder.seen.withLockedValue { $0.responsesAsked } == 0)
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    @Test("Redirects are followed without asking the delegate; the configuration's redirect filter still holds")
    func redirectsFollowedWithoutAsking() async throws {
        let place = Place()
        defer { place.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/old": respond.send(status: 302, headers: ["Location": "/new"], body: "moved")
            case "/denied": respond.send(status: 302, headers: ["Location": "/elsewhere"], body: "moved")
            default: respond.send(status: 200, body: "here")
            }
        }
        defer { origin.stop() }
        let recorder = BackgroundRecorder()
        let session = place.session(recorder) { configuration in
            configuration.redirectFilter = { _, to in to.path != "/elsewhere" }
        }
        defer { session.finishTasksAndInvalidate() }
        let followed = try session.downloadTask(with: Request(url: origin.url("/old")))
        followed.resume()
        let filtered = try session.downloadTask(with: Request(url: origin.url("/denied")))
        filtered.resume()
        try await eventually("both complete") { followed.state == .completed && filtered.state == .completed }
        #expect(followed.response?.status == 200)
        #expect(followed.currentRequest?.url.path == "/new")
        #expect(filtered.response?.status == 302)
        #expect(recorder.seen.withLockedValue { $0.redirectsAsked } == 0)
    }

    @Test("waitsForConnectivity is ignored: a refused connection fails at once and taskIsWaitingForConnectivity is never sent")
    func waitsForConnectivityIgnored() async throws {
        let place = Place()
        defer { place.remove() }
        let closed = ClosedPort()
        let recorder = BackgroundRecorder()
        let session = place.session(recorder) { $0.waitsForConnectivity = true }
        defer { session.finishTasksAndInvalidate() }
        let url = try #require(HTTPURL(string: "http://127.0.0.1:\(closed.port)/"))
        let task = try session.downloadTask(with: Request(url: url))
        task.resume()
        try await eventually("it fails") { task.state == .completed }
        #expect(task.error?.code == .cannotConnectToHost)
        #expect(recorder.seen.withLockedValue { $0.waitingForConnectivity } == 0)
    }

    @Test("Two live sessions with one identifier: the second gets backgroundSessionInUse and creates no task; once the first is invalidated a new one attaches")
    func oneLiveSessionPerIdentifier() async throws {
        let place = Place()
        defer { place.remove() }
        let first = place.session(BackgroundRecorder())
        let second = place.session(BackgroundRecorder())
        #expect(first.backgroundError == nil)
        #expect(second.backgroundError?.code == .backgroundSessionInUse)
        let url = try #require(HTTPURL(string: "http://127.0.0.1:9/"))
        #expect(throws: SessionError(.backgroundSessionInUse)) { try second.downloadTask(with: Request(url: url)) }
        await first.detachBackgroundTasks()
        let third = place.session(BackgroundRecorder())
        defer { third.invalidateAndCancel() }
        #expect(third.backgroundError == nil)
    }

    @Test("Each change is one write of the whole record: a store opened again finds the last one, and an unreadable record is skipped, not guessed at")
    func recordsReadBack() throws {
        let place = Place()
        defer { place.remove() }
        let url = try #require(HTTPURL(string: "http://127.0.0.1:9/big"))
        let store = try BackgroundTaskStore(root: place.directory, identifier: place.identifier)
        var record = BackgroundTaskRecord(identifier: 7, kind: .download, request: HTTPRequestHead(method: .get, url: url))
        record.state = .running
        store.put(record)
        for step in 1...50 { store.progress(7, bytes: Int64(step) << 20, expectedTotal: 50 << 20) }
        store.progress(7, bytes: 50 << 20, expectedTotal: 50 << 20, force: true)
        store.update(7) { $0.taskDescription = "big" }
        store.close()

        let reopened = try BackgroundTaskStore(root: place.directory, identifier: place.identifier)
        let found = try #require(reopened.record(7))
        #expect(found.state == .running)
        #expect(found.bytesReceived == 50 << 20)
        #expect(found.taskDescription == "big")
        #expect(reopened.records.count == 1)
        reopened.close()
        #expect(BackgroundTaskRecord.decode(Data("{\"version\": 99}".utf8)) == nil)
    }

    @Test("Identifiers map to distinct directory names that stay inside the root")
    func directoryNames() {
        #expect(BackgroundTaskStore.directoryName(for: "warm-1.default") == "warm-1.default")
        #expect(BackgroundTaskStore.directoryName(for: "..") == "%2E.")
        #expect(BackgroundTaskStore.directoryName(for: "a/b") == "a%2Fb")
        #expect(BackgroundTaskStore.directoryName(for: "a%2Fb") != BackgroundTaskStore.directoryName(for: "a/b"))
        #expect(BackgroundTaskStore.directoryName(for: "") == "%")
    }
}
