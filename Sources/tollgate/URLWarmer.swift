import Foundation
import NIOConcurrencyHelpers
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// Fetches URLs into the cache through the policy's sessions, a bounded number at a time, and
/// says what became of each (`tollgate warm`).
///
/// Each URL is one GET download task on the session its host rule picks (or the one named with
/// `--session`), under the same rules as a proxied request: credentials, trust, redirects and the
/// cache rules (`cache.store`, `force-ttl`) come from the policy. Bodies stream into the cache (and
/// the download's temporary file, removed at the end), so an artifact of any size costs no memory,
/// and a transfer that is cut resumes from where it was.
struct URLWarmer {
    /// What became of one URL.
    struct Outcome: Sendable {
        enum Kind: Sendable, Equatable {
            /// Already fresh in the cache: nothing was fetched.
            case fresh
            /// Fetched (or revalidated) and stored.
            case stored
            /// Fetched but not stored (no-store, private, a policy that refuses, a failed status, …).
            case notStored
            /// Not fetched: the task failed or the host is denied.
            case failed
        }

        var kind: Kind
        /// The line: `STATUS  CACHE-STATUS  URL`, or `failed  URL: why`.
        var line: String
        /// Where the response is in the cache (for the manifest): the key and the request's
        /// header fields, which select its variant. Nil when nothing was fetched.
        var stored: (key: CacheKey, requestHeaders: HeaderFields)?
        /// Whether the transfer was cut and went on from resume data.
        var resumed = false
    }

    let runtime: PolicyRuntime
    /// The session to use for every URL (`--session`); nil: the one each URL's rule names.
    let sessionName: String?
    /// How many times a cut transfer is resumed before the URL counts as failed (`--resume-attempts`).
    var resumeAttempts = 3

    /// Warms `urls`, at most `concurrency` at once; outcomes in the order of `urls`.
    func warm(_ urls: [HTTPURL], concurrency: Int) async -> [Outcome] {
        await withTaskGroup(of: (Int, Outcome).self) { group in
            var outcomes = [Outcome?](repeating: nil, count: urls.count)
            var next = 0
            func addNext() {
                guard next < urls.count else { return }
                let index = next
                next += 1
                group.addTask { (index, await warm(urls[index])) }
            }
            for _ in 0..<min(concurrency, urls.count) { addNext() }
            for await (index, outcome) in group {
                outcomes[index] = outcome
                addNext()
            }
            return outcomes.map { $0! }
        }
    }

    /// Fetches one URL. A transfer cut short (connection lost, timeout) goes on from where it
    /// was, with the download's resume data, up to ``resumeAttempts`` times: the cache keeps what
    /// arrived as partial content and combines it with the rest (docs/cache-semantics.md).
    func warm(_ url: HTTPURL) async -> Outcome {
        let route = runtime.route(url)
        if route.isDenied {
            return Outcome(kind: .failed, line: "failed  \(url): denied by the rule \(route.ruleLabel)")
        }
        let session = sessionName.flatMap { runtime.sessions[$0] } ?? route.session
        var resumeData: Data?
        var resumed = 0
        while true {
            let task: DownloadTask
            do {
                task = try resumeData.map { try session.downloadTask(withResumeData: $0) } ?? session.downloadTask(with: Request(url: url))
            } catch {
                return Outcome(kind: .failed, line: "failed  \(url): \(error)")
            }
            let listener = WarmTaskListener()
            task.delegate = listener
            let result = await withCheckedContinuation { continuation in
                listener.onComplete = { continuation.resume(returning: $0) }
                task.resume()
            }
            switch result {
            case .failure(let error):
                if let data = error.resumeData, resumed < resumeAttempts {
                    resumeData = data
                    resumed += 1
                    continue
                }
                if let data = error.resumeData { DownloadTask.discard(resumeData: data) }
                return Outcome(kind: .failed, line: "failed  \(url): \(error)", resumed: resumed > 0)
            case .success(let status):
                var outcome = Self.outcome(of: task, status: status, url: url, session: session)
                outcome.resumed = resumed > 0
                return outcome
            }
        }
    }

    /// What a finished task's cache outcome says about its URL.
    private static func outcome(of task: DownloadTask, status: Int, url: HTTPURL, session: Session) -> Outcome {
        let stored = place(of: task, url: url, session: session)
        let outcome = task.cacheOutcome
        let cacheStatus = outcome?.cacheStatus() ?? "tollgate; fwd=bypass"
        let line = "\(status)  \(cacheStatus)  \(url)"
        if let outcome, !outcome.servedStale, outcome.isHit {
            // A hit, or a stale entry the origin confirmed (304): it is in the cache.
            return Outcome(kind: .fresh, line: line, stored: stored)
        }
        if outcome?.stored == true, (200..<300).contains(status) || status == 304 {
            return Outcome(kind: .stored, line: line, stored: stored)
        }
        return Outcome(kind: .notStored, line: line)
    }

    /// The cache key of `url` on `session` (its rule's `cache.key` rewrite, then the store's
    /// normalization) and the header fields the task sent, which select the stored variant.
    private static func place(of task: SessionTask, url: HTTPURL, session: Session) -> (key: CacheKey, requestHeaders: HeaderFields)? {
        guard let cache = session.configuration.responseCache else { return nil }
        let keyURL = session.configuration.cacheKeyURL.map { $0(url) } ?? url
        let key = CacheKey(url: keyURL, normalizer: cache.store.options.keyNormalizer)
        return (key, task.currentRequest?.headerFields ?? HeaderFields())
    }
}

/// The delegate of one warming task: takes the status and reports the end once. The body goes
/// to the cache and to the download's file, which is removed when the task ends.
private final class WarmTaskListener: DownloadTaskDelegate, @unchecked Sendable {
    private let state = NIOLockedValueBox<Bool>(false)
    /// Set before the task resumes; called once.
    var onComplete: (@Sendable (Result<Int, SessionError>) -> Void)?

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        let first = state.withLockedValue { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        if let error {
            onComplete?(.failure(error))
        } else {
            onComplete?(.success(task.response?.status ?? 0))
        }
    }
}
