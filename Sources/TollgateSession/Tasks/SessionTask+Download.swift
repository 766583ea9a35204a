import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import NIOPosix

/// The file a download task writes, and the chain of pending writes (kept in order, off the loop).
/// Touched only on the task's event loop (futures of that loop complete on it).
final class DownloadFile: @unchecked Sendable {
    let path: String
    let handle: NIOFileHandle
    var written: Int64 = 0
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
    /// Opens the temporary file the body goes to.
    func startDownloadFile() {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("tollgate-download-\(session.identity)-\(taskIdentifier)-\(UUID().uuidString).tmp").path
        do {
            let handle = try NIOFileHandle(
                _deprecatedPath: path, mode: .write, flags: .posix(flags: O_CREAT | O_TRUNC | O_WRONLY, mode: 0o600)
            )
            engine.download = DownloadFile(path: path, handle: handle, eventLoop: eventLoop)
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
            if file.queuedWrites == DownloadFile.pauseAt - 2, !engine.isSuspended, !isDone { setReadDemand(true) }
            guard !isDone, let downloadTask = self as? DownloadTask else { return }
            file.written += count
            let expected = countOfBytesExpectedToReceive
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

    func finishDownload() {
        guard let file = engine.download else { return }
        file.pending.whenComplete { [self] result in
            try? file.handle.close()
            engine.download = nil
            defer { try? FileManager.default.removeItem(atPath: file.path) }
            guard !isDone else { return }
            if case .failure(let error) = result {
                fail(SessionError(.cannotWriteToFile, engine.request?.url, "writing \(file.path): \(error)"))
                return
            }
            if let downloadTask = self as? DownloadTask {
                let receivers = delegates(as: (any DownloadTaskDelegate).self)
                DelegateDispatch.notify(receivers) { $0.downloadTask(downloadTask, didFinishDownloadingTo: file.path) }
            }
            complete(with: nil)
        }
    }

    /// Ends this task without completion messages: another task (a download or stream task)
    /// took over its work, and the session forgets this one.
    func retireAfterHandover() {
        cancelWatchdog()
        engine = TaskEngine()
        engine.phase = .done
        _ = observed.withLock { $0.lifecycle.finished() }
        session.taskDidComplete(self)
    }

    /// Hands the running exchange to a new download task; this data task ends silently.
    func becomeDownload() {
        guard let dataTask = self as? DataTask else { return }
        let download = session.adoptDownload(from: self)
        download.engine = engine
        download.engine.completionHandler = nil
        download.engine.awaitingResponseDecision = false
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
        if !download.isDone, !download.engine.isSuspended { download.setReadDemand(true) }
    }
}
