public import NIOCore
public import TollgateHTTP

/// Task-level messages, in the model of `URLSessionTaskDelegate`.
///
/// A task's own delegate receives them first; for a method it does not implement, the session
/// delegate does (if it conforms); without either, the seeds' default applies. Every method
/// has a default implementation; called on the task's event loop.
public protocol TaskDelegate: AnyObject, Sendable {
    /// The task was created (before it is resumed).
    func taskDidCreate(_ task: SessionTask)

    /// This delegate as a data task delegate, or nil. Answered by the protocol extensions (do
    /// not implement it): a task asks it of every new delegate, and a witness call is cheaper
    /// than the runtime conformance check of an `as?` to a protocol.
    var asDataTaskDelegate: (any DataTaskDelegate)? { get }

    /// This delegate as an ``ImmediateResponseDeciding``, or nil (likewise answered by the
    /// protocol extensions).
    var asImmediateResponseDecider: (any ImmediateResponseDeciding)? { get }

    /// A task with an `earliestBeginDate` is about to start; answer continue, a new request, or cancel.
    /// Default: continue loading.
    func task(
        _ task: SessionTask,
        willBeginDelayedRequest request: Request,
        completionHandler: @escaping @Sendable (DelayedRequestDisposition) -> Void
    )

    /// A connection could not be made and the session waits for connectivity (called once per task,
    /// only when `waitsForConnectivity` is on).
    func taskIsWaitingForConnectivity(_ task: SessionTask)

    /// The server answered with a redirect. Default: follow it.
    func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    )

    /// A task-level challenge (Basic, Digest, or a session-level one the session delegate did not
    /// handle). Default: `performDefaultHandling`.
    func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    )

    /// The task needs its body stream (for the first send, or again for a redirect or retry).
    /// Default: none (the task fails with `requestBodyStreamExhausted`).
    func task(_ task: SessionTask, needNewBodyStream completionHandler: @escaping @Sendable (BodyStreamDecision) -> Void)

    /// Body bytes were written to the connection.
    func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)

    /// An interim (1xx) response arrived before the final one: 100 Continue, 102 Processing,
    /// 103 Early Hints (`URLSessionTaskDelegate`'s `didReceiveInformationalResponse`). Called in
    /// order, before the final response; never for 101 (the data task's response decision is).
    func task(_ task: SessionTask, didReceiveInformationalResponse response: HTTPResponseHead)

    /// The task's metrics are complete (called before `didCompleteWithError`).
    func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics)

    /// The task ended: `error` is nil on success.
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?)
}

extension TaskDelegate {
    public func taskDidCreate(_ task: SessionTask) { DelegateDispatch.markUnanswered() }

    public func task(
        _ task: SessionTask,
        willBeginDelayedRequest request: Request,
        completionHandler: @escaping @Sendable (DelayedRequestDisposition) -> Void
    ) { completionHandler(.unanswered) }

    public func taskIsWaitingForConnectivity(_ task: SessionTask) { DelegateDispatch.markUnanswered() }

    public var asDataTaskDelegate: (any DataTaskDelegate)? { nil }

    public var asImmediateResponseDecider: (any ImmediateResponseDeciding)? { nil }

    public func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) { completionHandler(.unanswered) }

    public func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) { completionHandler(.unanswered) }

    public func task(
        _ task: SessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (BodyStreamDecision) -> Void
    ) { completionHandler(.unanswered) }

    public func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        DelegateDispatch.markUnanswered()
    }

    public func task(_ task: SessionTask, didReceiveInformationalResponse response: HTTPResponseHead) {
        DelegateDispatch.markUnanswered()
    }

    public func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) {
        DelegateDispatch.markUnanswered()
    }

    public func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        DelegateDispatch.markUnanswered()
    }
}

/// Data-task messages, in the model of `URLSessionDataDelegate`.
public protocol DataTaskDelegate: TaskDelegate {
    /// The response head arrived; answer allow, cancel, become download, or (for a 101) become stream.
    /// Default: allow.
    func dataTask(
        _ task: DataTask,
        didReceive response: HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    )

    /// A piece of the body arrived (pieces arrive in order, as they come off the connection).
    func dataTask(_ task: DataTask, didReceive data: ByteBuffer)

    /// The task became a download task (after `.becomeDownload`); it gets no more messages,
    /// the download task gets the rest.
    func dataTask(_ task: DataTask, didBecome downloadTask: DownloadTask)

    /// The task became a stream task (after `.becomeStream` on a 101 response); it gets no more
    /// messages, the stream task owns the connection.
    func dataTask(_ task: DataTask, didBecome streamTask: StreamTask)

    /// The complete response is about to be stored; answer with it, a changed copy, or nothing.
    /// Default: store the proposed response.
    func dataTask(
        _ task: DataTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    )
}

extension DataTaskDelegate {
    public var asDataTaskDelegate: (any DataTaskDelegate)? { self }

    public func dataTask(
        _ task: DataTask,
        didReceive response: HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    ) { completionHandler(.unanswered) }

    public func dataTask(_ task: DataTask, didReceive data: ByteBuffer) { DelegateDispatch.markUnanswered() }

    public func dataTask(_ task: DataTask, didBecome downloadTask: DownloadTask) { DelegateDispatch.markUnanswered() }

    public func dataTask(_ task: DataTask, didBecome streamTask: StreamTask) { DelegateDispatch.markUnanswered() }

    public func dataTask(
        _ task: DataTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    ) { completionHandler(.unanswered) }
}

/// Download-task messages, in the model of `URLSessionDownloadDelegate`.
public protocol DownloadTaskDelegate: TaskDelegate {
    /// Body bytes were written to the download's file.
    func downloadTask(
        _ task: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    )

    /// The download finished; the file at `location` is removed when this method returns, so move
    /// or read it here.
    func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String)

    /// A download made from resume data got its response: it goes on from `fileOffset` bytes
    /// (0: the resource changed, or the server ignored the range, and it starts over);
    /// `expectedTotalBytes` is the whole length, −1 when unknown. `didWriteData` follows from there.
    func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64)

    /// The download's response is about to be stored (a download is cached like a data task's
    /// response; URLSession asks only data tasks, Tollgate asks downloads too so that a policy's
    /// cache rules cover them). Same answers as the data task question; unanswered: store it.
    func downloadTask(
        _ task: DownloadTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    )
}

extension DownloadTaskDelegate {
    public func downloadTask(
        _ task: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) { DelegateDispatch.markUnanswered() }

    public func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        DelegateDispatch.markUnanswered()
    }

    public func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        DelegateDispatch.markUnanswered()
    }

    public func downloadTask(
        _ task: DownloadTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    ) { completionHandler(.unanswered) }
}
