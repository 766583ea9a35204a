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
/// the download's file, removed at the end), so an artifact of any size costs no memory, and a
/// transfer that is cut resumes from where it was. The sessions are background sessions: a warm
/// that was killed leaves its tasks recorded, and the next run with the same identifier picks them
/// up (``pickedUp``) and goes on from their partial files.
struct URLWarmer {
    /// What became of one URL.
    struct Outcome: Sendable {
        enum Kind: String, Sendable, Equatable {
            /// Already fresh in the cache: nothing was fetched.
            case fresh
            /// Fetched (or revalidated) and stored.
            case stored
            /// Fetched but not stored (no-store, private, a policy that refuses, a failed status, …).
            case notStored = "not-stored"
            /// Not fetched: the task failed or the host is denied.
            case failed
        }

        var kind: Kind
        /// The line: `STATUS  CACHE-STATUS  URL`, or `failed  URL: why`.
        var line: String
        /// Where the response is in the cache (for the manifest): the key and the request's
        /// header fields, which select its variant. Nil when nothing was fetched.
        var stored: (key: CacheKey, requestHeaders: HeaderFields)?
        /// Whether the transfer went on from resume data (after a cut, or picked up from a run that
        /// was killed).
        var resumed = false
        /// The response's status, its Cache-Status, and the error (for `--json`).
        var status: Int?
        var cacheStatus: String?
        var error: String?
        /// Body bytes in the download's file at the end, and the offset the last resume went on from.
        var bytes: Int64 = 0
        var resumedFrom: Int64?
        var duration: TimeInterval = 0
        /// Where a redirect the session passed on (`redirects: pass`) points: a client asks for
        /// it next, so it is warmed too (``WarmCommand/warmRedirectTargets``). Nil otherwise.
        var location: HTTPURL?
        /// The body, for a URL in ``URLWarmer/keptBodies`` (a manifest, a token answer).
        var body: Data?
        /// The response's header fields (nil when nothing was fetched).
        var responseHeaders: HeaderFields?
    }

    let runtime: PolicyRuntime
    /// The session to use for every URL (`--session`); nil: the one each URL's rule names.
    let sessionName: String?
    /// Follows every task's progress and end.
    let tracker: WarmTracker
    /// Tasks a background session picked up from an earlier run, by the URL they warm.
    let pickedUp: PickedUpTasks
    /// How many times a cut transfer is resumed before the URL counts as failed (`--resume-attempts`).
    var resumeAttempts = 3
    /// Header fields sent with particular URLs, by URL (a registry's `Accept` and bearer token).
    var requestHeaders: [String: HeaderFields] = [:]
    /// URLs whose body (at most ``WarmTracker/keptBodyLimit``) their outcome carries.
    var keptBodies: Set<String> = []

    /// Warms `urls`, at most `concurrency` at once; outcomes in the order of `urls`. `finished`
    /// is called as each URL is done.
    func warm(_ urls: [HTTPURL], concurrency: Int, finished: @escaping @Sendable () -> Void = {}) async -> [Outcome] {
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
                finished()
                addNext()
            }
            return outcomes.map { $0! }
        }
    }

    /// Fetches one URL — or follows the task picked up for it from an earlier run. A transfer
    /// cut short (connection lost, timeout) goes on from where it was, with the download's resume
    /// data, up to ``resumeAttempts`` times: the cache keeps what arrived as partial content and
    /// combines it with the rest (docs/cache-semantics.md).
    func warm(_ url: HTTPURL) async -> Outcome {
        let started = Date()
        var outcome = await fetch(url)
        outcome.duration = Date().timeIntervalSince(started)
        return outcome
    }

    private func fetch(_ url: HTTPURL) async -> Outcome {
        let route = runtime.route(url)
        if route.isDenied {
            return Outcome(kind: .failed, line: "failed  \(url): denied by the rule \(route.ruleLabel)", error: "denied by the rule \(route.ruleLabel)")
        }
        let session = sessionName.flatMap { runtime.sessions[$0] } ?? route.session
        var resumeData: Data?
        var resumed = 0
        var resumedFrom: Int64?
        var picked = pickedUp.take(url.absoluteString)
        while true {
            let task: DownloadTask
            if let earlier = picked {
                picked = nil
                task = earlier
            } else {
                do {
                    let request = Request(url: url, headerFields: requestHeaders[url.absoluteString] ?? [:])
                    task = try resumeData.map { try session.downloadTask(withResumeData: $0) } ?? session.downloadTask(with: request)
                } catch {
                    return Outcome(kind: .failed, line: "failed  \(url): \(error)", error: "\(error)")
                }
                task.taskDescription = url.absoluteString
            }
            if keptBodies.contains(url.absoluteString) { tracker.keepBody(of: task) }
            task.resume()
            let result = await tracker.completion(of: task)
            let transfer = tracker.transfer(of: task)
            if let offset = transfer?.resumedFrom, offset > 0 { resumedFrom = offset }
            switch result {
            case .failure(let error):
                if let data = error.resumeData, resumed < resumeAttempts {
                    resumeData = data
                    resumed += 1
                    continue
                }
                if let data = error.resumeData { DownloadTask.discard(resumeData: data) }
                var outcome = Outcome(kind: .failed, line: "failed  \(url): \(error)", error: "\(error)")
                outcome.resumed = resumedFrom != nil || resumed > 0
                outcome.resumedFrom = resumedFrom
                outcome.bytes = transfer?.written ?? 0
                return outcome
            case .success(let status):
                var outcome = Self.outcome(of: task, status: status, url: url, session: session)
                outcome.resumed = resumedFrom != nil || resumed > 0
                outcome.resumedFrom = resumedFrom
                outcome.bytes = transfer?.written ?? 0
                outcome.body = transfer?.body
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
        let kind: Outcome.Kind
        if let outcome, !outcome.servedStale, outcome.isHit {
            // A hit, or a stale entry the origin confirmed (304): it is in the cache.
            kind = .fresh
        } else if outcome?.stored == true, (200..<300).contains(status) || status == 304 || task.response?.isRedirect == true {
            // A redirect stored is a hop a client following it is served offline; its target is
            // warmed next.
            kind = .stored
        } else {
            kind = .notStored
        }
        var result = Outcome(kind: kind, line: line, stored: kind == .notStored ? nil : stored, status: status, cacheStatus: cacheStatus)
        result.responseHeaders = task.response?.headerFields
        if let response = task.response, response.isRedirect, let location = response.headerFields["Location"] {
            result.location = try? url.resolving(location)
        }
        return result
    }

    /// The cache key of `url` on `session` (its rule's `cache.key` rewrite, then the store's
    /// normalization) and the header fields the task sent, which select the stored variant.
    private static func place(of task: SessionTask, url: HTTPURL, session: Session) -> (key: CacheKey, requestHeaders: HeaderFields)? {
        guard let cache = session.configuration.responseCache else { return nil }
        let keyURL = session.configuration.cacheKeyURL.map { $0(url) } ?? url
        let key = CacheKey(url: keyURL, normalizer: cache.store.options.keyNormalizer)
        var fields = task.currentRequest?.headerFields ?? HeaderFields()
        // A task picked up with resume data asked for the rest: its variant is the whole response's.
        fields.remove("Range")
        fields.remove("If-Range")
        return (key, fields)
    }
}

/// The download tasks background sessions picked up from an earlier run, by their description
/// (the URL they warm): each is handed out once.
final class PickedUpTasks: @unchecked Sendable {
    private let tasks: NIOLockedValueBox<[String: DownloadTask]>

    /// The picked-up download tasks of `sessions` that carry a description.
    init(sessions: [Session]) {
        var found: [String: DownloadTask] = [:]
        for session in sessions {
            for case let task as DownloadTask in session.allTasks {
                if let name = task.taskDescription { found[name] = task }
            }
        }
        tasks = NIOLockedValueBox(found)
    }

    /// The task picked up for `url`, once.
    func take(_ url: String) -> DownloadTask? {
        tasks.withLockedValue { $0.removeValue(forKey: url) }
    }

    /// Cancels (and forgets) the tasks whose URL `unwanted` says no list line asks for: an
    /// earlier run's list was another. Returns how many.
    func cancel(where unwanted: (String) -> Bool) -> Int {
        let left = tasks.withLockedValue { tasks -> [DownloadTask] in
            let names = tasks.keys.filter(unwanted)
            return names.compactMap { tasks.removeValue(forKey: $0) }
        }
        for task in left { task.cancel() }
        return left.count
    }

    /// How many were picked up and not yet taken.
    var count: Int { tasks.withLockedValue { $0.count } }
}
