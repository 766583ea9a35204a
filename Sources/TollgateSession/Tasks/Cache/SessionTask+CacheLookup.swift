import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP

/// The cache's first step for a request: the lookup, and running what ``TaskCache`` decides of
/// it — serve the stored response, revalidate it, wait for another task's fetch, complete stored
/// pieces, go to the network, or fail offline.
extension SessionTask {
    /// Consults the cache for `request`. Returns true when the cache took the task over (served it,
    /// sent a conditional request, is waiting for another task's fetch, or failed it as offline).
    /// `now`: the time of the lookup, also the time a stored response is served at.
    func consultCache(_ request: Request, policy: RequestCachePolicy, cache: ResponseCache, now: Date) -> Bool {
        guard let key = cache.key(method: request.method, url: cacheKeyURL(of: request)) else {
            engine.cache.outcome = CacheOutcome(result: request.method.isSafe ? .bypass : .method)
            engine.cache.invalidatesOnSuccess = !request.method.isSafe
            return false
        }
        engine.cache.key = key
        let ranges = CacheRules.byteRanges(of: request.head)
        if let ranges, ranges.single == nil, policy.mayLoadFromNetwork, !CacheControl(request: request.headerFields).onlyIfCached {
            // Several ranges go to the origin as they are (no multipart/byteranges is composed).
            engine.cache.key = nil
            engine.cache.outcome = CacheOutcome(result: .request, detail: "multiple-ranges")
            return false
        }
        let offline = policy == .returnCacheDontLoad
        var entry = policy == .reload ? nil : (try? cache.store.lookup(key, requestHeaders: request.headerFields, negotiating: offline))
        if let found = entry, cache.isInvalidated(key, storedAt: found.response.storedAt) { entry = nil }
        // The lookup chose the variant for these very fields (negotiating only offline, as decide would).
        let decision = cache.rules.decide(request: request.head, policy: policy, stored: entry?.response, now: now, selected: true)
        switch engine.cache.lookedUp(decision, stored: entry != nil, singleRange: ranges?.single, policy: policy) {
        case .network:
            return false
        case .serve(let hit, let stale, let revalidateAfter):
            guard let entry,
                offline
                    ? serveOffline(hit: hit, entry: entry, request: request, stale: stale, now: now)
                    : serveStored(hit: hit, entry: entry, request: request, stale: stale, now: now)
            else {
                return storedCopyUnusable(request, key: key, cache: cache)
            }
            if revalidateAfter { revalidateInBackground(request, key: key, cache: cache) }
            return true
        case .revalidate(var revalidation):
            guard let entry else { return false }
            if !revalidation.staleIfErrorAllowed, let window = session.configuration.staleIfErrorWindow?(request.url) {
                let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
                revalidation.staleIfErrorAllowed = cache.rules.staleIfErrorAllows(
                    stored: entry.response, request: request.head, now: now, atLeast: seconds
                )
            }
            engine.cache.revalidation = (entry, revalidation)
            engine.cache.clientRequest = request
            var conditional = request
            conditional.head = revalidation.upstreamRequest(from: request.head)
            engine.request = conditional
            sendToNetwork(conditional)
            return true
        case .miss(let range):
            if let range {
                return missWithRange(request, range, key: key, cache: cache, policy: policy, now: now)
            }
            if collapseIfAnotherTaskFetches(request, key: key, cache: cache) { return true }
            return completePieces(request, key: key, cache: cache)
        case .unavailable(let why, let tryPartial):
            if tryPartial, serveFromPartial(request, key: key, cache: cache, policy: policy, now: now) { return true }
            // A fetch of this key still in flight (its body arriving, or its commit not yet
            // done) is waited for, then looked up again: a request that came after the response
            // was delivered, when the proxy had gone offline meanwhile, gets what it stores.
            if collapseIfAnotherTaskFetches(request, key: key, cache: cache, mayLead: false) { return true }
            engine.cache.outcome = CacheOutcome(result: .hit, detail: CacheOutcome.notStoredDetail)
            engine.transactions.append(TransactionMetrics(request: request))
            fail(SessionError(.resourceUnavailable, request.url, why))
            return true
        }
    }

    /// ``serveStored(hit:entry:request:stale:outcome:now:)`` offline: a variant chosen by what the
    /// request accepts rather than by its Vary'd values says so (`detail="negotiated"`). Out of
    /// line, so the online hit path stays as it was.
    @inline(never)
    private func serveOffline(hit: CacheHit, entry: CacheEntry, request: Request, stale: Bool, now: Date) -> Bool {
        let negotiated = !VaryMatching.matches(entry.response, request: request.headerFields)
        return serveStored(
            hit: hit, entry: entry, request: request, stale: stale,
            outcome: negotiated ? CacheOutcome(result: .hit, detail: "negotiated") : nil, now: now
        )
    }

    /// The URL `request` is stored and looked up under (the session's rewrite, if any).
    func cacheKeyURL(of request: Request) -> HTTPURL {
        session.configuration.cacheKeyURL.map { rewrite in rewrite(request.url) } ?? request.url
    }

    /// The stored body is gone (evicted since the lookup) or was changed on disk: a miss, as if
    /// nothing were stored.
    private func storedCopyUnusable(_ request: Request, key: CacheKey, cache: ResponseCache) -> Bool {
        engine.cache.outcome = CacheOutcome(result: .uriMiss)
        return collapseIfAnotherTaskFetches(request, key: key, cache: cache)
    }

    /// When another task is already fetching this key, waits for it (at most the request timeout)
    /// and then looks again; otherwise this task leads the fetch (unless `mayLead` is false).
    func collapseIfAnotherTaskFetches(_ request: Request, key: CacheKey, cache: ResponseCache, mayLead: Bool = true) -> Bool {
        guard engine.cache.mayWaitForLeader(method: request.method) else { return false }
        let wait: EventLoopFuture<Void>
        switch cache.joinOrLead(key, on: eventLoop, mayLead: mayLead) {
        case .lead:
            engine.cache.leadsFetch = true
            return false
        case .pass:
            return false
        case .wait(let future):
            wait = future
        }
        engine.cache.collapsed = true
        let interval = request.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        // The leader's end or the wait running out, whichever comes first: the machine takes the
        // first and drops the other (and both once the task completed or was cancelled).
        let lookAgain: @Sendable () -> Void = { [self] in
            guard engine.machine.leaderWaitEnded() else { return }
            beginLoading(request)
        }
        let timer = eventLoop.scheduleTask(in: TimeAmount(interval)) { lookAgain() }
        engine.machine.waitForLeader(timer)
        wait.whenComplete { _ in
            timer.cancel()
            lookAgain()
        }
        return true
    }

    private func revalidateInBackground(_ request: Request, key: CacheKey, cache: ResponseCache) {
        guard cache.claimBackgroundRevalidation(key) else { return }
        var background = request
        background.cachePolicy = .reloadRevalidating
        background.head = request.head.withoutConditionalFields
        do {
            let task = try session.dataTask(with: background, on: eventLoop) { _, _, _ in
                cache.finishBackgroundRevalidation(key)
            }
            task.taskDescription = "background revalidation of \(key)"
            task.resume()
        } catch {
            cache.finishBackgroundRevalidation(key)
        }
    }
}
