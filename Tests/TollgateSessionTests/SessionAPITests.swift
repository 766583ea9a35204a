import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// The seeds' session-level API: the shared session, the task lists, flush and reset with
/// completion handlers, completion-handler tasks, progress, and invalidation by an error.
@Suite("The session API of the seeds", .serialized, .timeLimit(.minutes(1)))
struct SessionAPITests {
    @Test("Session.shared: one session, no delegate, the shared stores, and it cannot be invalidated")
    func sharedSession() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Set-Cookie": "seen=\(request.path); Path=/"], body: "shared")
        }
        defer { origin.stop() }
        let shared = Session.shared
        #expect(shared === Session.shared)
        #expect(shared.delegate == nil)
        #expect(shared.configuration.cookieStorage as? CookieStorage === CookieStorage.shared)
        #expect(shared.configuration.credentialStorage === CredentialStorage.shared)
        #expect(shared.configuration.responseCache === ResponseCache.shared)
        #expect(ResponseCache.shared != nil)
        shared.finishTasksAndInvalidate()
        shared.invalidateAndCancel()
        let (body, _) = try await shared.data(for: Request(url: origin.url("/first")))
        #expect(String(buffer: body) == "shared")
        #expect(CookieStorage.shared.cookieHeader(for: origin.url("/")) == "seen=/first")
        CookieStorage.shared.removeAll()
    }

    @Test("getTasks lists data, upload and download tasks apart; getAllTasks lists every kind")
    func taskLists() async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let url = try #require(HTTPURL(string: "http://127.0.0.1:1/"))
        let data = try session.dataTask(with: Request(url: url))
        let upload = try session.uploadTask(with: Request(url: url), from: ByteBuffer(string: "x"))
        let download = try session.downloadTask(with: Request(url: url))
        let stream = try session.streamTask(withHostName: "127.0.0.1", port: 1)
        let lists = await session.tasks
        #expect(lists.data.map(\.taskIdentifier) == [data.taskIdentifier])
        #expect(lists.uploads.map(\.taskIdentifier) == [upload.taskIdentifier])
        #expect(lists.downloads.map(\.taskIdentifier) == [download.taskIdentifier])
        let all = await withCheckedContinuation { continuation in session.getAllTasks { continuation.resume(returning: $0) } }
        #expect(all.map(\.taskIdentifier) == [data, upload, download, stream].map(\.taskIdentifier))
    }

    @Test("reset(completionHandler:) empties cookies, the cache and credentials; flush(completionHandler:) keeps them")
    func resetClearsEverything() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600", "Set-Cookie": "a=1"], body: "kept")
        }
        defer { origin.stop() }
        let cache = try CacheFixture()
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = cache.cache
        configuration.cookieStorage = CookieStorage()
        configuration.credentialStorage = CredentialStorage()
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let space = ProtectionSpace(host: "127.0.0.1", port: origin.port, protocol: "http", realm: "r", authenticationMethod: .httpBasic)
        configuration.credentialStorage?.set(Credential(user: "u", password: "p", persistence: .forSession), for: space)
        _ = try await session.data(for: Request(url: origin.url("/page")))
        await withCheckedContinuation { continuation in session.flush { continuation.resume() } }
        _ = try await session.data(for: Request(url: origin.url("/page")))
        #expect(origin.requestCount == 1, "flush keeps the cache")
        #expect(configuration.cookieStorage?.cookieHeader(for: origin.url("/")) == "a=1")

        await withCheckedContinuation { continuation in session.reset { continuation.resume() } }
        #expect(configuration.cookieStorage?.cookieHeader(for: origin.url("/")) == nil)
        #expect(configuration.credentialStorage?.allCredentials.isEmpty == true)
        _ = try await session.data(for: Request(url: origin.url("/page")))
        #expect(origin.requestCount == 2, "the cache was emptied")
    }

    @Test("A task made with a completion handler skips the delegate's response, data and completion calls; challenges and metrics still reach it")
    func completionHandlerTasksSkipTheDelegate() async throws {
        let origin = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onChallenge = { _ in .useCredential(Credential(user: "alice", password: "secret", persistence: .none)) }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let result = NIOLockedValueBox<(String, Int)?>(nil)
        let task = try session.dataTask(with: Request(url: origin.url())) { body, response, _ in
            result.withLockedValue { $0 = (body.map { String(buffer: $0) } ?? "", response?.status ?? 0) }
        }
        task.resume()
        try await eventually("the handler") { result.withLockedValue { $0 } != nil }
        #expect(result.withLockedValue { $0 }?.1 == 200)
        try await Task.sleep(for: .milliseconds(50))
        #expect(recorder.events.contains { $0.hasPrefix("task-challenge") })
        #expect(recorder.events.contains("metrics"))
        #expect(!recorder.events.contains { $0.hasPrefix("response") || $0.hasPrefix("complete") })
        #expect(recorder.bodyCount == 0)
    }

    @Test("Upload tasks with completion handlers send bytes and files; didSendBodyData still reaches the delegate")
    func uploadsWithCompletionHandlers() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 201, body: "got \(request.body.count)") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-upload-\(UUID().uuidString)")
        try Data(repeating: 0x62, count: 3000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let answers = NIOLockedValueBox<[String]>([])
        let record: @Sendable (ByteBuffer?, HTTPResponseHead?, SessionError?) -> Void = { body, response, error in
            answers.withLockedValue { $0.append("\(response?.status ?? 0) \(body.map { String(buffer: $0) } ?? "-") \(error.map { "\($0)" } ?? "")") }
        }
        try session.uploadTask(with: Request(method: .post, url: origin.url("/bytes")), from: ByteBuffer(string: "12345"), completionHandler: record).resume()
        try await eventually("bytes") { answers.withLockedValue { $0.count } == 1 }
        try session.uploadTask(with: Request(method: .put, url: origin.url("/file")), fromFile: file.path, completionHandler: record).resume()
        try await eventually("file") { answers.withLockedValue { $0.count } == 2 }
        #expect(answers.withLockedValue { $0 } == ["201 got 5 ", "201 got 3000 "])
        #expect(recorder.sentTotals.contains(3000))
        #expect(!recorder.events.contains { $0.hasPrefix("response") || $0.hasPrefix("complete") })
    }

    @Test("downloadTask(with:completionHandler:) hands over a file that exists during the call and is removed after it; the delegate hears of neither the file nor the completion")
    func downloadWithCompletionHandler() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "file body") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let seen = NIOLockedValueBox<(path: String, text: String, status: Int)?>(nil)
        try session.downloadTask(with: Request(url: origin.url("/file"))) { path, response, _ in
            let text = path.flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            seen.withLockedValue { $0 = (path ?? "", text, response?.status ?? 0) }
        }.resume()
        try await eventually("the handler") { seen.withLockedValue { $0 } != nil }
        let result = try #require(seen.withLockedValue { $0 })
        #expect(result.text == "file body")
        #expect(result.status == 200)
        try await eventually("the file is removed") { !FileManager.default.fileExists(atPath: result.path) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!recorder.events.contains { $0.hasPrefix("complete") })
    }

    @Test("willBeginDelayedRequest: useNewRequest loads the new request, cancel completes the task with cancelled")
    func delayedRequestDispositions() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: request.path) }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let replacement = Request(url: origin.url("/new"))
        recorder.onDelayed = { request in request.url.path == "/old" ? .useNewRequest(replacement) : .cancel }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let replaced = try session.dataTask(with: Request(url: origin.url("/old")))
        replaced.earliestBeginDate = Date().addingTimeInterval(0.1)
        replaced.resume()
        try await eventually("complete") { recorder.completed }
        #expect(recorder.body == "/new")
        #expect(origin.requests.map(\.path) == ["/new"])

        let cancelling = EventRecorder()
        cancelling.onDelayed = { _ in .cancel }
        let second = Session(configuration: .ephemeral, delegate: cancelling)
        defer { second.invalidateAndCancel() }
        let cancelled = try second.dataTask(with: Request(url: origin.url("/never")))
        cancelled.earliestBeginDate = Date().addingTimeInterval(0.1)
        cancelled.resume()
        try await eventually("complete") { cancelling.completed }
        #expect(cancelling.error?.code == .cancelled)
        #expect(origin.requestCount == 1)
    }

    @Test("progress counts bytes sent and received against what is expected; the client's size hints default to unknown")
    func progress() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: String(repeating: "x", count: 1000)) }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = try session.uploadTask(with: Request(method: .post, url: origin.url("/")), from: ByteBuffer(string: "12345")) { _, _, _ in }
        #expect(task.progress.isIndeterminate)  // the response's length is not known yet
        #expect(task.progress.fractionCompleted == 0)
        #expect(task.countOfBytesClientExpectsToSend == SessionTask.transferSizeUnknown)
        #expect(task.countOfBytesClientExpectsToReceive == -1)
        task.countOfBytesClientExpectsToSend = 5
        task.countOfBytesClientExpectsToReceive = 1000
        #expect(task.countOfBytesClientExpectsToSend == 5 && task.countOfBytesClientExpectsToReceive == 1000)
        task.resume()
        try await eventually("completed") { task.state == .completed }
        let done = task.progress
        #expect(done.completedUnitCount == 1005)
        #expect(done.totalUnitCount == 1005)
        #expect(done.fractionCompleted == 1)
        #expect(done.isFinished)
    }

    @Test("didBecomeInvalidWithError carries the error that invalidated the session, nil otherwise")
    func invalidationError() async throws {
        final class Invalidation: SessionDelegate, @unchecked Sendable {
            let errors = NIOLockedValueBox<[String]>([])
            func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
                errors.withLockedValue { $0.append(error.map { "\($0)" } ?? "nil") }
            }
        }
        let recorder = Invalidation()
        Session(configuration: .ephemeral, delegate: recorder).invalidateAndCancel()
        let broken = Session(configuration: .ephemeral, delegate: recorder)
        broken.invalidateAndCancel(dueTo: SessionError(.cannotWriteToFile, nil, "the task store is gone"))
        try await eventually("both") { recorder.errors.withLockedValue { $0.count } == 2 }
        #expect(Set(recorder.errors.withLockedValue { $0 }) == ["nil", "cannotWriteToFile: the task store is gone"])
    }
}
