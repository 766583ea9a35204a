import Foundation
import NIOConcurrencyHelpers
import NIOCore
import TollgateHTTP
@testable import TollgateSession

/// A delegate that records every message in order and answers with scripted decisions.
final class EventRecorder: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
    private let lock = NIOLock()
    private var _events: [String] = []
    private var _body = ByteBuffer()
    private var _sent: [Int64] = []
    private var _metrics: TaskMetrics?
    private var _error: SessionError?
    private var _completed = false
    private var _invalidated = false

    var onResponse: (@Sendable (DataTask, HTTPResponseHead) -> ResponseDisposition)?
    var onData: (@Sendable (DataTask, ByteBuffer) -> Void)?
    var onRedirect: (@Sendable (HTTPResponseHead, Request) -> RedirectDecision)?
    var onChallenge: (@Sendable (AuthenticationChallenge) -> ChallengeDisposition)?
    var onSessionChallenge: (@Sendable (AuthenticationChallenge) -> ChallengeDisposition)?
    var bodyStream: (@Sendable () -> BodyStream?)?
    var onDelayed: (@Sendable (Request) -> DelayedRequestDisposition)?

    private func record(_ event: String) { lock.withLock { _events.append(event) } }

    var events: [String] { lock.withLock { _events } }
    var body: String { lock.withLock { String(buffer: _body) } }
    var bodyCount: Int { lock.withLock { _body.readableBytes } }
    var sentTotals: [Int64] { lock.withLock { _sent } }
    var metrics: TaskMetrics? { lock.withLock { _metrics } }
    var error: SessionError? { lock.withLock { _error } }
    var completed: Bool { lock.withLock { _completed } }
    var invalidated: Bool { lock.withLock { _invalidated } }

    func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        lock.withLock { _invalidated = true }
        record("invalid")
    }

    func session(_ session: Session, didReceive challenge: AuthenticationChallenge, completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void) {
        guard let onSessionChallenge else {
            completionHandler(.unanswered)
            return
        }
        record("session-challenge \(challenge.protectionSpace.authenticationMethod)")
        completionHandler(onSessionChallenge(challenge))
    }

    func task(_ task: SessionTask, didReceive challenge: AuthenticationChallenge, completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void) {
        record("task-challenge \(challenge.protectionSpace.authenticationMethod) failures=\(challenge.previousFailureCount)")
        completionHandler(onChallenge?(challenge) ?? .performDefaultHandling)
    }

    func task(_ task: SessionTask, willBeginDelayedRequest request: Request, completionHandler: @escaping @Sendable (DelayedRequestDisposition) -> Void) {
        record("delayed")
        completionHandler(onDelayed?(request) ?? .continueLoading)
    }

    func taskIsWaitingForConnectivity(_ task: SessionTask) { record("waiting") }

    func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        record("redirect \(response.status) \(newRequest.url.path)")
        completionHandler(onRedirect?(response, newRequest) ?? .follow(newRequest))
    }

    func task(_ task: SessionTask, needNewBodyStream completionHandler: @escaping @Sendable (BodyStreamDecision) -> Void) {
        record("need-body")
        completionHandler(.stream(bodyStream?()))
    }

    func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        lock.withLock { _sent.append(totalBytesSent) }
    }

    func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) {
        lock.withLock { _metrics = metrics }
        record("metrics")
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        lock.withLock {
            _error = error
            _completed = true
        }
        record(error.map { "complete \($0.code)" } ?? "complete")
    }

    func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
        record("response \(response.status)")
        completionHandler(onResponse?(task, response) ?? .allow)
    }

    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        lock.withLock { _ = _body.writeImmutableBuffer(data) }
        onData?(task, data)
    }

    func dataTask(_ task: DataTask, willCacheResponse proposed: CachedResponse, completionHandler: @escaping @Sendable (CacheDecision) -> Void) {
        record("will-cache \(proposed.response.status)")
        completionHandler(.store(proposed))
    }
}

