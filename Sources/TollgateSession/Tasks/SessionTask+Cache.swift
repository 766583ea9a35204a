import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import NIOPosix
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// A stored body read from its file in pieces, paced by the task (suspend stops the reading).
final class StoredFileReader: @unchecked Sendable {
    let handle: NIOFileHandle
    /// Where the bytes served start in the file (a range of a stored body).
    let offset: Int64
    var remaining: Int64
    var reading = false
    /// Whether the task's delegate was offered the whole body as a file region (done once,
    /// before the first read).
    var offeredRegion = false
    /// A file region of this file is being written by the delegate: the handle stays open.
    var regionInFlight = false

    init(handle: NIOFileHandle, offset: Int64 = 0, length: Int64) {
        self.handle = handle
        self.offset = offset
        self.remaining = length
    }
}

/// The cache's part in loading a request: lookup, serving stored responses, validation,
/// storing network responses as they stream, invalidation, and collapsing of misses.
extension SessionTask {
    /// Consults the cache for `request`. Returns true when the cache took the task over (served it,
    /// sent a conditional request, is waiting for another task's fetch, or failed it as offline).
    /// `now`: the time of the lookup, also the time a stored response is served at.
    func consultCache(_ request: Request, policy: RequestCachePolicy, cache: ResponseCache, now: Date) -> Bool {
        guard let key = cache.key(method: request.method, url: cacheKeyURL(of: request)) else {
            engine.cacheOutcome = CacheOutcome(result: request.method.isSafe ? .bypass : .method)
            engine.invalidatesOnSuccess = !request.method.isSafe
            return false
        }
        engine.cacheKey = key
        let ranges = CacheRules.byteRanges(of: request.head)
        if let ranges, ranges.single == nil, policy.mayLoadFromNetwork, !CacheControl(request: request.headerFields).onlyIfCached {
            // Several ranges go to the origin as they are (no multipart/byteranges is composed).
            engine.cacheKey = nil
            engine.cacheOutcome = CacheOutcome(result: .request, detail: "multiple-ranges")
            return false
        }
        var entry = policy == .reload ? nil : (try? cache.store.lookup(key, requestHeaders: request.headerFields))
        if let found = entry, cache.isInvalidated(key, storedAt: found.response.storedAt) { entry = nil }
        let decision = cache.rules.decide(request: request.head, policy: policy, stored: entry?.response, now: now)
        switch decision {
        case .fresh(let hit):
            guard let entry else { return false }
            if serveStored(hit: hit, entry: entry, request: request, stale: false, now: now) { return true }
            return storedCopyUnusable(request, key: key, cache: cache)
        case .staleAcceptable(let hit):
            guard let entry else { return false }
            if serveStored(hit: hit, entry: entry, request: request, stale: true, now: now) { return true }
            return storedCopyUnusable(request, key: key, cache: cache)
        case .staleWhileRevalidate(let hit, _):
            guard let entry else { return false }
            guard serveStored(hit: hit, entry: entry, request: request, stale: true, now: now) else {
                return storedCopyUnusable(request, key: key, cache: cache)
            }
            revalidateInBackground(request, key: key, cache: cache)
            return true
        case .revalidate(let revalidation):
            guard let entry else { return false }
            engine.revalidation = (entry, revalidation)
            engine.clientRequest = request
            engine.cacheOutcome = CacheOutcome(result: .stale)
            var conditional = request
            conditional.head = revalidation.upstreamRequest(from: request.head)
            engine.request = conditional
            sendToNetwork(conditional)
            return true
        case .miss(let reason):
            // `reload` skips the lookup, so the rules see nothing stored: it is still a reload.
            engine.cacheOutcome = CacheOutcome(result: policy == .reload ? .request : Self.missResult(reason))
            if let range = ranges?.single {
                return missWithRange(request, range, key: key, cache: cache, policy: policy, now: now)
            }
            if collapseIfAnotherTaskFetches(request, key: key, cache: cache) { return true }
            return completePieces(request, key: key, cache: cache)
        case .unavailable(let reason):
            if ranges?.single != nil, serveFromPartial(request, key: key, cache: cache, policy: policy, now: now) { return true }
            engine.cacheOutcome = CacheOutcome(result: .hit, detail: "not-stored")
            let why = reason == .onlyIfCached
                ? "only-if-cached, and nothing usable is stored"
                : "not in the cache, and the cache policy forbids the network"
            engine.transactions.append(TransactionMetrics(request: request))
            fail(SessionError(.resourceUnavailable, request.url, why))
            return true
        }
    }

    /// The URL `request` is stored and looked up under (the session's rewrite, if any).
    private func cacheKeyURL(of request: Request) -> HTTPURL {
        session.configuration.cacheKeyURL.map { rewrite in rewrite(request.url) } ?? request.url
    }

    /// The stored body is gone (evicted since the lookup) or was changed on disk: a miss, as if
    /// nothing were stored.
    private func storedCopyUnusable(_ request: Request, key: CacheKey, cache: ResponseCache) -> Bool {
        engine.cacheOutcome = CacheOutcome(result: .uriMiss)
        return collapseIfAnotherTaskFetches(request, key: key, cache: cache)
    }

    private static func missResult(_ reason: CacheLookupDecision.MissReason) -> CacheOutcome.Result {
        switch reason {
        case .notStored: .uriMiss
        case .varyMismatch: .varyMiss
        case .method: .method
        case .reload: .request
        }
    }

    /// When another task is already fetching this key, waits for it (at most the request timeout)
    /// and then looks again; otherwise this task leads the fetch (unless `mayLead` is false).
    func collapseIfAnotherTaskFetches(_ request: Request, key: CacheKey, cache: ResponseCache, mayLead: Bool = true) -> Bool {
        // A task already leading (its retry after a 401 asks again) must not wait for itself.
        guard request.method == .get, !engine.collapsed, !engine.leadsFetch else { return false }
        let wait: EventLoopFuture<Void>
        switch cache.joinOrLead(key, on: eventLoop, mayLead: mayLead) {
        case .lead:
            engine.leadsFetch = true
            return false
        case .pass:
            return false
        case .wait(let future):
            wait = future
        }
        engine.collapsed = true
        let interval = request.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        let resumed = NIOLoopBoundBox(false, eventLoop: eventLoop)
        let lookAgain: @Sendable () -> Void = { [self] in
            guard !resumed.value, !isDone else { return }
            resumed.value = true
            beginLoading(request)
        }
        let timer = eventLoop.scheduleTask(in: TimeAmount(interval)) { lookAgain() }
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

    /// Answers the task from storage. Returns false when the stored body is gone (evicted since
    /// the lookup): then the task goes to the network.
    @discardableResult
    /// `now`: when the caller read the clock for this (a stored response is fetched, starts and,
    /// when its body is inline, ends at that instant).
    func serveStored(
        hit: CacheHit, entry: CacheEntry, request: Request, stale: Bool, outcome: CacheOutcome? = nil,
        now: Date = TickClock.date
    ) -> Bool {
        guard let cache = session.configuration.responseCache else { return false }
        let body = entry.body
        var reader: StoredFileReader?
        let isHead = request.method == .head
        let conditional = cache.rules.answersConditional(clientRequest: request.head, stored: hit.stored)
        // The bytes to send: all, one range of them, or none (HEAD, 304, 416).
        let answer = isHead || conditional ? .whole : servedRange(of: hit, length: body.length, request: request, cache: cache)
        let sent: Range<Int64>? =
            switch answer {
            case _ where isHead || conditional: nil
            case .part(let range): range
            case .unsatisfiable: nil
            case .whole, .forward: 0..<body.length
            }
        if case .file(let path, let length) = body, let sent {
            // Opened now: a file removed by eviction later stays readable through the descriptor.
            guard let handle = try? NIOFileHandle(_deprecatedPath: path) else { return false }
            if let size = Self.fileSize(handle), size != length {
                // Changed on disk behind the store's back (truncated, appended to): serving it would
                // send the recorded Content-Length and then another body. A miss instead.
                try? handle.close()
                cache.discardDamaged(entry, sizeOnDisk: size, on: eventLoop)
                return false
            }
            if sent.lowerBound > 0 {
                guard (try? handle.withUnsafeFileDescriptor({ lseek($0, off_t(sent.lowerBound), SEEK_SET) })) == off_t(sent.lowerBound) else {
                    try? handle.close()
                    return false
                }
            }
            reader = StoredFileReader(handle: handle, offset: sent.lowerBound, length: Int64(sent.count))
        }
        var result = outcome ?? CacheOutcome(result: .hit)
        result.servedStale = stale
        engine.cacheOutcome = result
        let head: HTTPResponseHead =
            switch answer {
            case _ where conditional: cache.rules.notModifiedResponse(for: hit)
            case .part(let range) where !isHead: hit.responseHead.partialContent(range, of: body.length)
            case .unsatisfiable where !isHead: hit.responseHead.rangeNotSatisfiable(length: body.length)
            default: hit.responseHead
            }
        // Filled in place once appended: appending a finished local copy copied (and retained)
        // every field of it.
        engine.transactions.append(TransactionMetrics(request: request))
        engine.transaction.fetchStartDate = now
        engine.transaction.resourceFetchType = .localCache
        engine.transaction.responseStartDate = now
        engine.transaction.countOfResponseBodyBytesReceived = Int64(sent?.count ?? 0)
        engine.transaction.response = head
        engine.request = request
        deliverResponse(head)
        if let sent {
            if case .inline(let buffer) = body, !sent.isEmpty,
                let piece = buffer.getSlice(at: buffer.readerIndex + Int(sent.lowerBound), length: sent.count)
            {
                acceptBody(piece)
            }
            engine.storedFile = reader
        }
        if engine.storedFile == nil {
            engine.transaction.responseEndDate = now
            if engine.isSuspended || engine.awaitingResponseDecision || !engine.held.isEmpty {
                engine.endHeld = true
            } else {
                finishSuccessfully()
            }
        } else {
            pumpStoredFile()
        }
        return true
    }

    /// Reads the next piece of a stored body file, unless the task is paused.
    func pumpStoredFile() {
        guard let reader = engine.storedFile, !reader.reading, !engine.isSuspended, !engine.awaitingResponseDecision, !isDone
        else { return }
        if reader.remaining == 0 {
            try? reader.handle.close()
            engine.storedFile = nil
            engine.transaction.responseEndDate = TickClock.date
            engine.endHeld = true
            releaseHeld()
            return
        }
        if !reader.offeredRegion {
            reader.offeredRegion = true
            if offerFileRegion(reader) { return }
        }
        reader.reading = true
        let count = Int(min(reader.remaining, 256 * 1024))
        session.fileIO.read(fileHandle: reader.handle, byteCount: count, allocator: ByteBufferAllocator(), eventLoop: eventLoop)
            .whenComplete { [self] result in
                reader.reading = false
                guard !isDone else {
                    try? reader.handle.close()
                    return
                }
                switch result {
                case .success(let buffer) where buffer.readableBytes > 0:
                    reader.remaining -= Int64(buffer.readableBytes)
                    acceptBody(buffer)
                    pumpStoredFile()
                case .success, .failure:
                    try? reader.handle.close()
                    engine.storedFile = nil
                    fail(SessionError(.resourceUnavailable, engine.request?.url, "the stored body could not be read"))
                }
            }
    }

    /// Hands the whole stored body to the task's own delegate as a file region when it takes
    /// one (``StoredFileReceiving``); returns false when the body is to be read as usual.
    private func offerFileRegion(_ reader: StoredFileReader) -> Bool {
        guard let dataTask = self as? DataTask, engine.completionHandler == nil, engine.wholeBody == nil,
            engine.download == nil, engine.cacheWriter == nil, engine.held.isEmpty,
            let receiver = delegate as? any StoredFileReceiving,
            reader.remaining > 0, reader.remaining <= Int64(Int.max),
            Self.fileSize(reader.handle, restoring: reader.offset).map({ $0 >= reader.offset + reader.remaining }) == true,
            receiver.dataTask(dataTask, acceptsFileRegionOf: reader.remaining)
        else { return false }
        let length = reader.remaining
        let region = FileRegion(fileHandle: reader.handle, readerIndex: Int(reader.offset), endIndex: Int(reader.offset + length))
        reader.reading = true
        reader.regionInFlight = true
        observed.withLock { $0.countOfBytesReceived += length }
        let loop = eventLoop
        let finish: @Sendable ((any Error)?) -> Void = { [self] error in
            reader.regionInFlight = false
            reader.reading = false
            guard !isDone else {
                // The task ended meanwhile and left the file open for the region: close it now.
                try? reader.handle.close()
                return
            }
            if error != nil {
                try? reader.handle.close()
                engine.storedFile = nil
                fail(SessionError(.resourceUnavailable, engine.request?.url, "the stored body could not be sent"))
                return
            }
            reader.remaining = 0
            pumpStoredFile()
        }
        let answered = NIOLockedValueBox(false)
        receiver.dataTask(dataTask, didReceive: region) { error in
            guard answered.withLockedValue({ done in defer { done = true }; return !done }) else { return }
            if loop.inEventLoop { finish(error) } else { loop.execute { finish(error) } }
        }
        return true
    }

    /// The size of an open file (nil when it cannot be known): a body file whose size is not the
    /// recorded length is not served (``serveStored(hit:entry:request:stale:outcome:now:)``).
    /// Called before anything was read: the file offset is left at `restoring` (where reading starts).
    private static func fileSize(_ handle: NIOFileHandle, restoring offset: Int64 = 0) -> Int64? {
        try? handle.withUnsafeFileDescriptor { descriptor -> Int64? in
            let end = lseek(descriptor, 0, SEEK_END)
            guard lseek(descriptor, off_t(offset), SEEK_SET) == off_t(offset), end >= 0 else { return nil }
            return Int64(end)
        } ?? nil
    }

    // MARK: network responses

    /// Cache work on a network response head. Returns true when the cache answers instead
    /// (a 304 to a revalidation, or a stale response allowed on a 5xx).
    func cacheHandlesNetworkHead(_ head: HTTPResponseHead) -> Bool {
        guard let cache = session.configuration.responseCache else { return false }
        if engine.invalidatesOnSuccess, head.status < 400, let request = engine.request {
            let keys = cache.rules.invalidations(for: request.head, response: head, normalizer: cache.store.options.keyNormalizer)
            if !keys.isEmpty { engine.invalidationRemoval = cache.invalidate(keys, at: Date(), on: eventLoop) }
        }
        guard let (_, revalidation) = engine.revalidation else { return false }
        if head.status == 304 {
            engine.notModified = head
            return true
        }
        if head.status >= 500, revalidation.staleIfErrorAllowed {
            engine.cacheOutcome?.forwardStatus = head.status
            engine.serveStaleAfterExchange = true
            return true
        }
        engine.cacheOutcome?.forwardStatus = head.status
        return false
    }

    /// The 304 or 5xx the cache answers for has ended: serve the stored response.
    func finishCacheAnsweredExchange() {
        guard let cache = session.configuration.responseCache, let (entry, _) = engine.revalidation,
            let original = engine.clientRequest
        else { return }
        engine.revalidation = nil
        if engine.serveStaleAfterExchange {
            engine.serveStaleAfterExchange = false
            serveStaleCopy(of: entry, request: original, cache: cache)
            return
        }
        guard let notModified = engine.notModified else { return }
        engine.notModified = nil
        let requestTime = engine.requestDate ?? TickClock.date
        let responseTime = engine.responseDate ?? TickClock.date
        cache.offLoop(on: eventLoop) {
            try cache.store.updateHeaders(of: entry.id, notModified: notModified, requestTime: requestTime, responseTime: responseTime)
        }.whenComplete { [self] result in
            guard !isDone else { return }
            guard case .success(let updated?) = result else {
                // The 304 does not match what is stored: ask again without conditions (§4.3.4).
                engine.cacheOutcome = CacheOutcome(result: .stale, forwardStatus: 304, detail: "validator-mismatch")
                sendToNetwork(original)
                return
            }
            let hit = CacheHit(stored: updated, freshness: Freshness(
                headerFields: updated.headerFields, status: updated.status, requestTime: updated.requestTime,
                responseTime: updated.responseTime, now: TickClock.date, rules: cache.rules
            ))
            let outcome = CacheOutcome(result: .stale, forwardStatus: 304)
            if !serveStored(hit: hit, entry: entry, request: original, stale: false, outcome: outcome) {
                sendToNetwork(original)
            }
        }
    }

    /// Serves a stale stored response because the origin failed (stale-if-error).
    func serveStaleCopy(of entry: CacheEntry, request: Request, cache: ResponseCache) {
        let hit = CacheHit(stored: entry.response, freshness: Freshness(
            headerFields: entry.response.headerFields, status: entry.response.status, requestTime: entry.response.requestTime,
            responseTime: entry.response.responseTime, now: TickClock.date, rules: cache.rules
        ))
        var outcome = engine.cacheOutcome ?? CacheOutcome(result: .stale)
        outcome.detail = "stale-if-error"
        if !serveStored(hit: hit, entry: entry, request: request, stale: true, outcome: outcome) {
            fail(SessionError(.resourceUnavailable, request.url, "the origin failed and the stored copy is gone"))
        }
    }

    /// Starts streaming a network response into storage when the rules allow storing it.
    func beginStoringIfAllowed(_ head: HTTPResponseHead) {
        guard let cache = session.configuration.responseCache, let request = engine.request,
            engine.transactions.last?.resourceFetchType == .networkLoad, engine.cacheWriter == nil
        else { return }
        // A POST response the origin marks as the resource's representation is stored for GETs.
        let answersGET = engine.cacheKey == nil && cache.rules.postResponseAnswersGET(request: request.head, response: head)
        guard let key = engine.cacheKey ?? (answersGET ? cache.key(method: .get, url: cacheKeyURL(of: request)) : nil) else {
            return
        }
        let policy = request.cachePolicy ?? session.configuration.requestCachePolicy
        if sessionAuthorizationForbidsStoring(head) {
            engine.cacheOutcome?.detail = StorabilityReason.authorization.rawValue
            return
        }
        if request.method == .head {
            engine.cacheOutcome?.detail = StorabilityReason.method.rawValue  // a HEAD's answer has no body to store
            updateStoredFromHEAD(head, key: key, cache: cache)
            return
        }
        let context = StorabilityContext(capacity: cache.store.options.maxSize, fromNetwork: true, policy: policy)
        if head.status == 206 {
            beginStoringPiece(head, request: request, key: key, cache: cache, context: context)
            return
        }
        defer { if engine.cacheWriter == nil, request.method == .get { notStoring(key, cache: cache) } }
        var stored = request.head.withoutConditionalFields
        switch cache.rules.storability(request: stored, response: head, bodyLength: head.contentLength, context: context) {
        case .store(let notes):
            if answersGET { stored.method = .get }  // what a later GET finds: a GET's answer
            do {
                engine.cacheWriter = try cache.store.beginStore(
                    key: key, request: stored, response: head,
                    requestTime: engine.requestDate ?? TickClock.date,
                    responseTime: engine.responseDate ?? TickClock.date
                )
                engine.cacheOutcome?.stored = true
                cache.noteStorable(key)
                if !notes.isEmpty { engine.cacheOutcome?.detail = notes.map(\.rawValue).joined(separator: ",") }
            } catch {
                engine.cacheOutcome?.detail = "size-limit"
            }
        case .doNotStore(let reason):
            engine.cacheOutcome?.detail = reason.rawValue
        }
    }

    /// The response for `key` will not be stored: tasks waiting for this one need not wait for
    /// its body (they would find nothing stored and go to the network anyway), and later misses
    /// on the key pass for a while instead of waiting (``ResponseCache/noteUncacheable(_:)``).
    private func notStoring(_ key: CacheKey, cache: ResponseCache) {
        cache.noteUncacheable(key)
        if engine.leadsFetch {
            engine.leadsFetch = false
            cache.finishLeading(key)
        }
    }

    /// Hands a body piece to the storage writer; a writer that fails is dropped (nothing stored).
    func storeBodyPiece(_ buffer: ByteBuffer) {
        if let piece = engine.pieceWriter {
            do {
                try piece.append(buffer)
            } catch {
                piece.abort()
                engine.pieceWriter = nil
            }
        }
        guard let writer = engine.cacheWriter else { return }
        do {
            try writer.append(buffer)
        } catch {
            writer.abort()
            engine.cacheWriter = nil
            engine.cacheOutcome?.stored = false
            engine.cacheOutcome?.detail = (error as? CacheStoreError) == .bodyTooLarge ? "size-limit" : "truncated"
        }
    }

    /// The body ended: asks `willCacheResponse`, then commits (off the loop) or discards.
    /// `then` runs on the loop when storing is settled.
    func finishStoring(then: @escaping () -> Void) {
        if engine.pieceWriter != nil {
            finishStoringPiece(then: then)
            return
        }
        guard let cache = session.configuration.responseCache, let writer = engine.cacheWriter else {
            then()
            return
        }
        engine.cacheWriter = nil
        stopIdleTimer()
        askToStore(bodyLength: writer.bytesWritten, replaceFields: writer.replaceHeaderFields) { [self] store in
            guard !isDone else {
                writer.abort()
                return
            }
            guard store else {
                writer.abort()
                engine.cacheOutcome?.stored = false
                engine.cacheOutcome?.detail = "policy"
                then()
                return
            }
            commit(writer, cache: cache, then: then)
        }
    }

    /// Asks the task's delegates whether to store its response with a body of `bodyLength`
    /// bytes (`willCacheResponse`: the data task question, or the download task one). An answer
    /// that changed the header fields hands them to `replaceFields`; `then` gets, on the loop,
    /// whether to store. Asked even after the task ended (a cut body kept as partial content).
    func askToStore(bodyLength: Int64, replaceFields: @escaping (HeaderFields) -> Void, then: @escaping (Bool) -> Void) {
        // A 206 completing pieces is not the task's response (it gets the combined one): asked about all the same.
        guard let head = response ?? engine.transaction.response, let request = engine.request else {
            then(true)
            return
        }
        let proposed = CachedResponse(
            request: request.head.withoutConditionalFields, response: head, bodyLength: bodyLength,
            requestTime: engine.requestDate ?? TickClock.date, responseTime: engine.responseDate ?? TickClock.date
        )
        let isUnanswered: (CacheDecision) -> Bool = { if case .unanswered = $0.base { true } else { false } }
        let settle: (CacheDecision?) -> Void = { decision in
            switch decision?.base {
            case .doNotStore:
                then(false)
            case .store(let chosen):
                if chosen.response.headerFields != head.headerFields { replaceFields(chosen.response.headerFields) }
                then(true)
            case .unanswered, .none:
                then(true)
            }
        }
        if let dataTask = self as? DataTask {
            ask(
                dataDelegates,
                { delegate, answer in delegate.dataTask(dataTask, willCacheResponse: proposed, completionHandler: answer) },
                isUnanswered: isUnanswered, then: settle
            )
        } else if let downloadTask = self as? DownloadTask {
            ask(
                delegates(as: (any DownloadTaskDelegate).self),
                { delegate, answer in delegate.downloadTask(downloadTask, willCacheResponse: proposed, completionHandler: answer) },
                isUnanswered: isUnanswered, then: settle
            )
        } else {
            then(true)
        }
    }

    /// Commits a finished body off the loop; what the task reports as stored is true only once
    /// the entry committed.
    private func commit(_ writer: CacheEntryWriter, cache: ResponseCache, then: @escaping () -> Void) {
        let settled = UncheckedBox(then)
        // After the removal this task's own unsafe request set off (a POST's answer stored for
        // GETs), which would otherwise remove the new entry too if it ran later.
        let removal = engine.invalidationRemoval ?? eventLoop.makeSucceededVoidFuture()
        removal.flatMap { [eventLoop] in cache.offLoop(on: eventLoop) { try writer.commit() } }.whenComplete { [self] result in
            if case .failure = result {
                engine.cacheOutcome?.stored = false
                engine.cacheOutcome?.detail = "truncated"
            }
            settled.value()
        }
    }

    /// Ends the task's part in the cache (every way a task ends).
    func releaseCacheState() {
        if let writer = engine.cacheWriter {
            writer.abort()
            engine.cacheWriter = nil
            engine.cacheOutcome?.stored = false
        }
        engine.pieceWriter?.abort()
        engine.pieceWriter = nil
        if let reader = engine.storedFile {
            // A region being written keeps its file open; its completion closes it.
            if !reader.regionInFlight { try? reader.handle.close() }
            engine.storedFile = nil
        }
        if engine.leadsFetch, let key = engine.cacheKey {
            engine.leadsFetch = false
            session.configuration.responseCache?.finishLeading(key)
        }
    }

    /// On a network failure while revalidating: serve the stale copy when stale-if-error allows.
    func servesStaleOnFailure() -> Bool {
        guard !engine.responseDelivered, let cache = session.configuration.responseCache,
            let (entry, revalidation) = engine.revalidation, revalidation.staleIfErrorAllowed, let request = engine.clientRequest
        else { return false }
        engine.revalidation = nil
        serveStaleCopy(of: entry, request: request, cache: cache)
        return true
    }
}
