import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// Storing a network response as it streams: the storability rules at the head, the writer fed
/// each body piece, `willCacheResponse` and the commit at the end, and what a task leaves of
/// storage when it ends.
extension SessionTask {
    /// Starts streaming a network response into storage when the rules allow storing it.
    func beginStoringIfAllowed(_ head: HTTPResponseHead) {
        guard let cache = session.configuration.responseCache, let request = engine.request,
            engine.transactions.last?.resourceFetchType == .networkLoad, engine.cache.writer == nil
        else { return }
        // A POST response the origin marks as the resource's representation is stored for GETs.
        let answersGET = engine.cache.key == nil && cache.rules.postResponseAnswersGET(request: request.head, response: head)
        guard let key = engine.cache.key ?? (answersGET ? cache.key(method: .get, url: cacheKeyURL(of: request)) : nil) else {
            return
        }
        if cache.store.isReadOnly {
            // Nor is a stored response updated from a HEAD. The reason is the one a write refused
            // by the store would give.
            engine.cache.outcome?.detail = TaskCache.notStoredDetail(for: CacheStoreError.readOnly)
            if request.method == .get { notStoring(key, cache: cache) }
            return
        }
        let policy = request.cachePolicy ?? session.configuration.requestCachePolicy
        if sessionAuthorizationForbidsStoring(head) {
            engine.cache.outcome?.detail = StorabilityReason.authorization.rawValue
            return
        }
        if request.method == .head {
            engine.cache.outcome?.detail = StorabilityReason.method.rawValue  // a HEAD's answer has no body to store
            updateStoredFromHEAD(head, key: key, cache: cache)
            return
        }
        var context = StorabilityContext(capacity: cache.store.options.maxSize, fromNetwork: true, policy: policy)
        if CacheRules.isRedirectStoredWhenForced(head.status) {  // the rule asked only where it can matter
            context.freshnessForced = session.configuration.forcesFreshness?(request.url) ?? false
        }
        if head.status == 206 {
            beginStoringPiece(head, request: request, key: key, cache: cache, context: context)
            return
        }
        defer { if engine.cache.writer == nil, request.method == .get { notStoring(key, cache: cache) } }
        var stored = request.head.withoutConditionalFields
        switch cache.rules.storability(request: stored, response: head, bodyLength: head.contentLength, context: context) {
        case .store(let notes):
            if answersGET { stored.method = .get }  // what a later GET finds: a GET's answer
            do {
                engine.cache.writer = try cache.store.beginStore(
                    key: key, request: stored, response: head,
                    requestTime: engine.requestDate ?? TickClock.date,
                    responseTime: engine.responseDate ?? TickClock.date
                )
                engine.cache.outcome?.stored = true
                cache.noteStorable(key)
                if !notes.isEmpty { engine.cache.outcome?.detail = notes.map(\.rawValue).joined(separator: ",") }
            } catch {
                engine.cache.outcome?.detail = "size-limit"
            }
        case .doNotStore(let reason):
            engine.cache.outcome?.detail = reason.rawValue
        }
    }

    /// The response for `key` will not be stored: tasks waiting for this one need not wait for
    /// its body (they would find nothing stored and go to the network anyway), and later misses
    /// on the key pass for a while instead of waiting (``ResponseCache/noteUncacheable(_:)``).
    private func notStoring(_ key: CacheKey, cache: ResponseCache) {
        cache.noteUncacheable(key)
        if engine.cache.leadsFetch {
            engine.cache.leadsFetch = false
            cache.finishLeading(key)
        }
    }

    /// Hands a body piece to the storage writer; a writer that fails is dropped (nothing stored).
    func storeBodyPiece(_ buffer: ByteBuffer) {
        if let piece = engine.cache.pieceWriter {
            do {
                try piece.append(buffer)
            } catch {
                piece.abort()
                engine.cache.pieceWriter = nil
                session.configuration.responseCache?.noteStorageFailure(error, url: engine.request?.url.absoluteString)
            }
        }
        guard let writer = engine.cache.writer else { return }
        do {
            try writer.append(buffer)
        } catch {
            writer.abort()
            engine.cache.writer = nil
            engine.cache.writerFailed(error)
            session.configuration.responseCache?.noteStorageFailure(error, url: engine.request?.url.absoluteString)
        }
    }

    /// The body ended: asks `willCacheResponse`, then commits (off the loop) or discards.
    /// `then` runs on the loop when storing is settled.
    func finishStoring(then: @escaping () -> Void) {
        if engine.cache.pieceWriter != nil {
            finishStoringPiece(then: then)
            return
        }
        guard let cache = session.configuration.responseCache, let writer = engine.cache.writer else {
            then()
            return
        }
        engine.cache.writer = nil
        stopIdleTimer()
        let mark = engine.machine.mark
        askToStore(bodyLength: writer.bytesWritten, replaceFields: writer.replaceHeaderFields) { [self] store in
            guard engine.machine.isStill(at: mark) else {  // cancelled while the delegate decided
                writer.abort()
                return
            }
            guard store else {
                writer.abort()
                engine.cache.outcome?.stored = false
                engine.cache.outcome?.detail = "policy"
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
        let removal = engine.cache.invalidationRemoval ?? eventLoop.makeSucceededVoidFuture()
        removal.flatMap { [eventLoop] in cache.offLoop(on: eventLoop) { try writer.commit() } }.whenComplete { [self] result in
            if case .failure(let error) = result {
                engine.cache.writerFailed(error)
                cache.noteStorageFailure(error, url: engine.request?.url.absoluteString)
            }
            settled.value()
        }
    }

    /// Ends the task's part in the cache (every way a task ends).
    func releaseCacheState() {
        let held = engine.cache.release()
        held.writer?.abort()
        held.pieceWriter?.abort()
        // A region being written keeps its file open; its completion closes it.
        if let reader = held.storedFile, !reader.regionInFlight { try? reader.handle.close() }
        if let key = held.ledKey { session.configuration.responseCache?.finishLeading(key) }
    }
}
