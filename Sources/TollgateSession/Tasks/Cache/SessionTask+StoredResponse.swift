import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// Sending a stored response: every stored body a task receives — a hit, a revalidated or stale
/// copy, a range of partial content, combined pieces — is sent from ``serveStored(hit:entry:request:stale:outcome:now:)``:
/// inline bodies at once, files read in pieces paced by the task (or handed over as a file region).
extension SessionTask {
    /// Answers the task from storage. Returns false when the stored body is gone (evicted since
    /// the lookup): then the task goes to the network.
    /// `now`: when the caller read the clock for this (a stored response is fetched, starts and,
    /// when its body is inline, ends at that instant).
    @discardableResult
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
        let sent = TaskCache.bytesSent(of: answer, length: body.length, bodiless: isHead || conditional)
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
        engine.cache.outcome = result
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
            engine.cache.storedFile = reader
        }
        if engine.cache.storedFile == nil {
            engine.transaction.responseEndDate = now
            if engine.machine.endReceived() { finishSuccessfully() }
        } else {
            engine.machine.servingStoredBody()
            pumpStoredFile()
        }
        return true
    }

    /// How much of a stored body file one read takes. A connection holds about two pieces while its
    /// client is slower than the disk (one queued for its socket, one being read), so this sets the
    /// memory a large hit costs per connection: 256 KiB pieces made 64 connections of 8 MiB hits
    /// add 32 MiB to the peak RSS (issue #29's bound is 64 MiB for the whole run); 128 KiB pieces
    /// cost the same CPU per hit (docs/performance.md, session 18: large objects).
    static var storedPieceSize: Int { 128 * 1024 }

    /// Reads the next piece of a stored body file, unless the task is paused.
    func pumpStoredFile() {
        guard let reader = engine.cache.storedFile, !reader.reading, engine.machine.isFlowing else { return }
        if reader.remaining == 0 {
            try? reader.handle.close()
            engine.cache.storedFile = nil
            engine.transaction.responseEndDate = TickClock.date
            engine.machine.storedBodyEnded()
            releaseHeld()
            return
        }
        if !reader.offeredRegion {
            reader.offeredRegion = true
            if offerFileRegion(reader) { return }
        }
        reader.reading = true
        let count = Int(min(reader.remaining, Int64(Self.storedPieceSize)))
        session.fileIO.read(fileHandle: reader.handle, byteCount: count, allocator: ByteBufferAllocator(), eventLoop: eventLoop)
            .whenComplete { [self] result in
                reader.reading = false
                guard engine.machine.storedReadArrived() else {
                    try? reader.handle.close()  // the task moved on: the piece is late
                    return
                }
                switch result {
                case .success(let buffer) where buffer.readableBytes > 0:
                    reader.remaining -= Int64(buffer.readableBytes)
                    acceptBody(buffer)
                    pumpStoredFile()
                case .success, .failure:
                    try? reader.handle.close()
                    engine.cache.storedFile = nil
                    fail(SessionError(.resourceUnavailable, engine.request?.url, "the stored body could not be read"))
                }
            }
    }

    /// Hands the whole stored body to the task's own delegate as a file region when it takes
    /// one (``StoredFileReceiving``); returns false when the body is to be read as usual.
    private func offerFileRegion(_ reader: StoredFileReader) -> Bool {
        guard let dataTask = self as? DataTask, engine.completionHandler == nil, engine.wholeBody == nil,
            engine.download == nil, engine.cache.writer == nil, !engine.machine.holdsPieces,
            let receiver = delegate as? any StoredFileReceiving,
            reader.remaining > 0, reader.remaining <= Int64(Int.max),
            Self.fileSize(reader.handle).map({ $0 >= reader.offset + reader.remaining }) == true,
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
            guard engine.machine.storedReadArrived() else {
                // The task ended meanwhile and left the file open for the region: close it now.
                try? reader.handle.close()
                return
            }
            if error != nil {
                try? reader.handle.close()
                engine.cache.storedFile = nil
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
    /// One `fstat`, which leaves the file offset alone (two `lseek`s, to the end and back, did not).
    private static func fileSize(_ handle: NIOFileHandle) -> Int64? {
        try? handle.withUnsafeFileDescriptor { OpenFileSize.of(descriptor: $0) } ?? nil
    }
}
