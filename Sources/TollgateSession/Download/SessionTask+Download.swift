import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import NIOPosix
import TollgateCache
import TollgateHTTP

/// The file a download task writes, and the chain of pending writes (kept in order, off the loop).
/// Touched only on the task's event loop (futures of that loop complete on it).
final class DownloadFile: @unchecked Sendable {
    let path: String
    let handle: NIOFileHandle
    /// Bytes in the file whose writes finished (a resumed download starts at its offset).
    var written: Int64 = 0
    /// The whole length for `didWriteData` (−1 when unknown).
    var expectedTotal: Int64 = -1
    var pending: EventLoopFuture<Void>
    /// Writes queued but not finished; reading pauses while too many are (a slow disk).
    var queuedWrites = 0

    static let pauseAt = 8

    init(path: String, handle: NIOFileHandle, eventLoop: any EventLoop) {
        self.path = path
        self.handle = handle
        self.pending = eventLoop.makeSucceededVoidFuture()
    }
}

/// Downloads: the temp file, `didWriteData`, `didFinishDownloadingTo`, and becoming a download.
extension SessionTask {
    /// The failures after which a download hands out resume data in its error.
    static let resumableFailures: Set<SessionError.Code> = [.networkConnectionLost, .timedOut, .badServerResponse]

    /// Opens the temporary file the body goes to (the partial file, for a download made from
    /// resume data).
    func startDownloadFile() {
        if let resume = engine.resume {
            engine.resume = nil
            continueDownloadFile(resume)
            return
        }
        let path = newDownloadFilePath()
        do {
            // A new name each time (a UUID): one that exists, or a link, is not ours to write through.
            let handle = try NIOFileHandle(
                _deprecatedPath: path, mode: .write,
                flags: .posix(flags: O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY, mode: 0o600)
            )
            let file = DownloadFile(path: path, handle: handle, eventLoop: eventLoop)
            file.expectedTotal = countOfBytesExpectedToReceive
            engine.download = file
            if let response { recordDownloadFile(file, response: response) }
        } catch {
            fail(SessionError(.cannotWriteToFile, engine.request?.url, "cannot create \(path): \(error)"))
        }
    }

    func writeToDownloadFile(_ buffer: ByteBuffer) {
        guard let file = engine.download else { return }
        let fileIO = session.fileIO
        let loop = eventLoop
        let count = Int64(buffer.readableBytes)
        file.queuedWrites += 1
        if file.queuedWrites == DownloadFile.pauseAt { setReadDemand(false) }
        file.pending = file.pending.flatMap {
            fileIO.write(fileHandle: file.handle, buffer: buffer, eventLoop: loop)
        }
        file.pending.whenSuccess { [self] in
            file.queuedWrites -= 1
            if file.queuedWrites == DownloadFile.pauseAt - 2, !engine.machine.isSuspended, !isDone { setReadDemand(true) }
            guard !isDone, let downloadTask = self as? DownloadTask else { return }
            file.written += count
            recordDownloadProgress(file)
            let expected = file.expectedTotal
            let receivers = delegates(as: (any DownloadTaskDelegate).self)
            DelegateDispatch.notify(receivers) {
                $0.downloadTask(downloadTask, didWriteData: count, totalBytesWritten: file.written, totalBytesExpectedToWrite: expected)
            }
        }
    }

    /// A download that ends without finishing leaves no file behind.
    func discardDownloadFile() {
        guard let file = engine.download else { return }
        engine.download = nil
        file.pending.whenComplete { _ in
            try? file.handle.close()
            try? FileManager.default.removeItem(atPath: file.path)
        }
    }

    /// The body ended: the file is complete once its writes are; the cache entry is committed
    /// (so what the task reports as stored is true), then the file is handed over and removed.
    func finishDownload() {
        guard let file = engine.download else { return }
        // Cancelled while the writes or the commit finished: the machine has moved on.
        let mark = engine.machine.mark
        file.pending.whenComplete { [self] result in
            try? file.handle.close()
            engine.download = nil
            guard engine.machine.isStill(at: mark) else {
                try? FileManager.default.removeItem(atPath: file.path)
                return
            }
            if case .failure(let error) = result {
                try? FileManager.default.removeItem(atPath: file.path)
                fail(SessionError(.cannotWriteToFile, engine.request?.url, "writing \(file.path): \(error)"))
                return
            }
            finishStoring { [self] in
                guard engine.machine.isStill(at: mark) else {
                    try? FileManager.default.removeItem(atPath: file.path)
                    return
                }
                if let handler = engine.downloadCompletion {
                    engine.downloadCompletion = nil
                    engine.toldByCompletionHandler = true
                    handler(file.path, response, nil)
                } else if let downloadTask = self as? DownloadTask {
                    let receivers = delegates(as: (any DownloadTaskDelegate).self)
                    DelegateDispatch.notify(receivers) { $0.downloadTask(downloadTask, didFinishDownloadingTo: file.path) }
                }
                // Gone before the task says it completed (the handler or delegate had it).
                try? FileManager.default.removeItem(atPath: file.path)
                complete(with: nil)
            }
        }
    }

    // MARK: resuming

    /// Opens the partial file of resume data: appended to when the response is the 206 for the
    /// rest, emptied when the server sent the whole (a 200: the resource changed, or ranges are
    /// not supported) or anything else; then `didResumeAtOffset`.
    private func continueDownloadFile(_ resume: DownloadResumeData) {
        guard let head = response else { return }
        let url = engine.request?.url
        let contentRange = head.status == 206 ? head.headerFields["Content-Range"].flatMap(ContentRange.init) : nil
        if head.status == 206, contentRange?.range?.lowerBound != resume.bytesReceived {
            fail(SessionError(
                .cannotResumeDownload, url,
                "the server answered the range from \(resume.bytesReceived) with \(head.headerFields["Content-Range"] ?? "no Content-Range")"
            ))
            return
        }
        if head.status == 416 {
            fail(SessionError(.cannotResumeDownload, url, "the server has no bytes from \(resume.bytesReceived) on (416)"))
            return
        }
        let resumes = head.status == 206
        // The rest is appended after the bytes the resume data counts: a file that holds more
        // (written after they were counted) is cut back to them first.
        if resumes, truncate(resume.partialFile, off_t(resume.bytesReceived)) != 0 {
            fail(SessionError(.cannotResumeDownload, url, "the partial file \(resume.partialFile) is gone"))
            return
        }
        let flags = resumes ? O_WRONLY | O_APPEND : O_WRONLY | O_TRUNC
        let handle: NIOFileHandle
        do {
            handle = try NIOFileHandle(_deprecatedPath: resume.partialFile, mode: .write, flags: .posix(flags: flags, mode: 0o600))
        } catch {
            fail(SessionError(.cannotResumeDownload, url, "the partial file \(resume.partialFile) is gone"))
            return
        }
        let file = DownloadFile(path: resume.partialFile, handle: handle, eventLoop: eventLoop)
        file.written = resumes ? resume.bytesReceived : 0
        file.expectedTotal = resumes ? (contentRange?.completeLength ?? -1) : (head.contentLength ?? -1)
        engine.download = file
        engine.cache.resumedFile = resumes ? (file.path, resume.bytesReceived) : nil
        recordDownloadFile(file, response: head)
        guard let downloadTask = self as? DownloadTask else { return }
        let receivers = delegates(as: (any DownloadTaskDelegate).self)
        let offset = file.written
        let total = file.expectedTotal
        DelegateDispatch.notify(receivers) { $0.downloadTask(downloadTask, didResumeAtOffset: offset, expectedTotalBytes: total) }
    }

    /// Resume data for the download as it stands, when the seeds' conditions hold: a GET, a
    /// strong ETag or a Last-Modified, byte ranges supported (`Accept-Ranges: bytes`, or a 206),
    /// and the partial file still there. The file is then kept (the task no longer owns it);
    /// otherwise `then` gets nil and the file goes with the task. Waits for pending writes.
    func produceResumeData(then: @escaping (Data?) -> Void) {
        guard self is DownloadTask, let file = engine.download, let head = response, let request = currentRequest,
            request.method == .get, let validator = CacheRules.ifRangeValue(for: head.headerFields),
            DownloadResumeData.acceptsRanges(head)
        else {
            then(nil)
            return
        }
        engine.download = nil
        let original = originalRequest
        let settled = UncheckedBox(then)
        file.pending.whenComplete { _ in
            try? file.handle.close()
            guard file.written > 0, FileManager.default.fileExists(atPath: file.path) else {
                try? FileManager.default.removeItem(atPath: file.path)
                settled.value(nil)
                return
            }
            let data = DownloadResumeData(
                url: request.url.absoluteString,
                originalRequest: original.map { DownloadResumeData.RequestRecord($0.head) },
                currentRequest: DownloadResumeData.RequestRecord(request.head),
                validator: validator,
                bytesReceived: file.written,
                expectedTotalBytes: file.expectedTotal,
                partialFile: file.path
            )
            settled.value(data.encoded())
        }
    }

    /// A download failed: its error carries resume data when it can be resumed.
    func failDownloadWithResumeData(_ error: SessionError) {
        cancelWatchdog()
        produceResumeData { [self] data in
            var error = error
            error.resumeData = data
            complete(with: error)
        }
    }

    /// Ends this task without completion messages: another task (a download or stream task)
    /// took over its work, and the session forgets this one.
    func retireAfterHandover() {
        cancelWatchdog()
        engine = TaskEngine()
        _ = engine.machine.complete()
        _ = observed.withLock { $0.lifecycle.finished() }
        session.taskDidComplete(self)
    }

    /// Hands the running exchange to a new download task; this data task ends silently.
    func becomeDownload() {
        guard let dataTask = self as? DataTask else { return }
        let download = session.adoptDownload(from: self)
        download.engine = engine
        download.engine.completionHandler = nil
        _ = download.engine.machine.decisionArrived()
        download.observed.withLock { state in
            let mine = observed.withLock { $0 }
            state.currentRequest = mine.currentRequest
            state.response = mine.response
            state.countOfBytesReceived = mine.countOfBytesReceived
            state.countOfBytesExpectedToReceive = mine.countOfBytesExpectedToReceive
            state.countOfBytesSent = mine.countOfBytesSent
            state.countOfBytesExpectedToSend = mine.countOfBytesExpectedToSend
            state.priority = mine.priority
            // Same state as the data task: a suspended data task becomes a suspended download.
            state.lifecycle = mine.lifecycle
        }
        engine.exchange?.retarget(to: download)
        retireAfterHandover()

        let receivers = dataDelegates
        DelegateDispatch.notify(receivers) { $0.dataTask(dataTask, didBecome: download) }
        // The data task's watch ended when it retired: the download registers its own.
        download.engine.resourceDeadline = nil
        download.startResourceTimer()
        download.restartIdleTimer()
        download.startDownloadFile()
        download.releaseHeld()
        if !download.isDone, !download.engine.machine.isSuspended { download.setReadDemand(true) }
    }
}
