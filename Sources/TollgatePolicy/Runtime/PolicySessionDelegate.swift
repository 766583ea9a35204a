import NIOConcurrencyHelpers
import TollgateCache
public import TollgateHTTP
public import TollgateSession

/// The session delegate of every session a ``PolicyRuntime`` makes: it answers the questions the
/// session asks about its tasks from the host rules.
///
/// It implements only decisions, never data delivery: a task's own delegate (the proxy's
/// exchange) receives the response and body, and each decision it does not implement falls
/// through to this one.
///
/// - `willPerformHTTPRedirection`: looked up for the task's current request URL (the request
///   that got the redirect) with ``redirectAction(from:to:)``: `pass` delivers the redirect
///   response; `follow` follows; `follow-same-host` follows only to the same host without going
///   from https to http. A redirect to a host whose rule says `trust.deny` is never followed,
///   whatever the mode: the client gets the 3xx, and its request for the new URL meets the deny.
/// - `willCacheResponse`: looked up for the task's current request URL (the final URL after
///   redirects) with ``cacheDecision(for:proposed:)``: `store: deny` stores nothing; `allow`
///   stores the proposed response as is; `force-ttl` stores
///   ``TollgateSession/CachedResponse/forcingFreshness(for:sharedCache:)``.
///
/// - The server-trust challenge and each host's TLS settings (roots, client identity): in
///   `PolicySessionDelegate+Trust.swift`.
///
/// Additional headers and the upstream proxy are not decided here: they are in the session's
/// configuration (``SessionSettings/makeSessionConfiguration(name:)``).
///
/// The rules it decides from are replaced by ``PolicyRuntime/apply(_:)`` while the session is
/// kept, so a task running across a reload gets the new rules' answers; a session the reload
/// retires keeps the rules it had.
public final class PolicySessionDelegate: SessionDelegate, TaskDelegate, DataTaskDelegate, DownloadTaskDelegate, HealthCheckTrustDeciding {
    /// The name of the session it is the delegate of.
    public let sessionName: String
    private let rules: NIOLockedValueBox<PolicyDecisions>
    private let onInvalidate: (@Sendable (Session) -> Void)?
    /// Told of task progress and ends (see the initializer).
    private let observer: (any DownloadTaskDelegate & SessionDelegate)?
    /// The trust logger, failure counter and trust files (shared by a runtime's sessions).
    public let trustEnvironment: TrustEnvironment

    /// A delegate deciding from `decisions`.
    ///
    /// - Parameters:
    ///   - sessionName: the session's name, for logs.
    ///   - decisions: the rules.
    ///   - trustEnvironment: where trust events are logged and counted, and trust files kept.
    ///   - observer: told of each task's completion, download progress, resumption and finished
    ///     file when the task's own delegate does not answer them, and of a background session's
    ///   `didFinishEvents` (a session created again picks up its tasks before anyone could give
    ///     them a delegate of their own: this is how a caller follows them).
    ///   - onInvalidate: called when the session became invalid (`didBecomeInvalidWithError`).
    public init(
        sessionName: String,
        decisions: PolicyDecisions,
        trustEnvironment: TrustEnvironment = TrustEnvironment(),
        observer: (any DownloadTaskDelegate & SessionDelegate)? = nil,
        onInvalidate: (@Sendable (Session) -> Void)? = nil
    ) {
        self.observer = observer
        self.sessionName = sessionName
        self.rules = NIOLockedValueBox(decisions)
        self.trustEnvironment = trustEnvironment
        self.onInvalidate = onInvalidate
    }

    /// The rules it decides from now.
    public var decisions: PolicyDecisions { rules.withLockedValue { $0 } }

    /// Replaces the rules (a reload that kept the session).
    func update(_ decisions: PolicyDecisions) {
        rules.withLockedValue { $0 = decisions }
    }

    // MARK: decisions as values

    /// What to do with a redirect from `original` to `location`: never follow to a denied host;
    /// otherwise ``PolicyDecisions/redirectAction(from:to:)`` (the mode of `original`'s session).
    public func redirectAction(from original: HTTPURL, to location: HTTPURL) -> RedirectAction {
        let decisions = self.decisions
        if decisions.decide(host: location.host, port: location.effectivePort).deny { return .pass }
        return decisions.redirectAction(from: original, to: location)
    }

    /// The response to store for `url`, or nil to store nothing (see the type's description).
    ///
    /// - Parameters:
    ///   - url: the request's URL, whose rule decides.
    ///   - proposed: what the session proposes to store.
    ///   - sharedCache: whether the cache follows the shared-cache rules; nil: as the
    ///     configuration's `cache.kind` says.
    public func cacheDecision(for url: HTTPURL, proposed: CachedResponse, sharedCache: Bool? = nil) -> CachedResponse? {
        let decisions = self.decisions
        switch decisions.cacheStoreDecision(for: url) {
        case .doNotStore:
            return nil
        case .store(nil):
            return proposed
        case .store(let ttl?):
            let shared = sharedCache ?? (decisions.configuration.cache.kind == .shared)
            return proposed.forcingFreshness(for: ttl, sharedCache: shared)
        }
    }

    // MARK: SessionDelegate

    public func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        onInvalidate?(session)
    }

    public func sessionDidFinishEvents(forBackgroundSession session: Session) {
        observer?.sessionDidFinishEvents(forBackgroundSession: session)
    }

    // MARK: TaskDelegate

    public func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        observer?.task(task, didCompleteWithError: error)
    }

    public func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        guard let original = task.currentRequest?.url ?? task.originalRequest?.url else {
            completionHandler(.deliverRedirectResponse)
            return
        }
        switch redirectAction(from: original, to: newRequest.url) {
        case .pass: completionHandler(.deliverRedirectResponse)
        case .follow: completionHandler(.follow(newRequest))
        }
    }

    // MARK: DataTaskDelegate

    public func dataTask(
        _ task: DataTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    ) {
        completionHandler(willCache(proposed, for: task))
    }

    // MARK: DownloadTaskDelegate

    public func downloadTask(
        _ task: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        observer?.downloadTask(task, didWriteData: bytesWritten, totalBytesWritten: totalBytesWritten, totalBytesExpectedToWrite: totalBytesExpectedToWrite)
    }

    public func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        observer?.downloadTask(task, didResumeAtOffset: fileOffset, expectedTotalBytes: expectedTotalBytes)
    }

    public func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        observer?.downloadTask(task, didFinishDownloadingTo: location)
    }

    /// The same answer for a download (Tollgate caches downloads, so the rules cover them).
    public func downloadTask(
        _ task: DownloadTask,
        willCacheResponse proposed: CachedResponse,
        completionHandler: @escaping @Sendable (CacheDecision) -> Void
    ) {
        completionHandler(willCache(proposed, for: task))
    }

    private func willCache(_ proposed: CachedResponse, for task: SessionTask) -> CacheDecision {
        let url = task.currentRequest?.url ?? proposed.request.url
        // The cache's own rules say whether it reads s-maxage (shared) or max-age (private).
        let shared = task.session.configuration.responseCache?.rules.isShared
        guard let chosen = cacheDecision(for: url, proposed: proposed, sharedCache: shared) else { return .doNotStore }
        return .store(chosen)
    }
}
