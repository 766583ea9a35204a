public import Foundation
import Synchronization

/// A task that writes the response body to a temporary file (`URLSessionDownloadTask`).
///
/// Its delegate gets `didWriteData` as the file grows and `didFinishDownloadingTo` at the end;
/// the file is removed after that call returns. A data task becomes one when its delegate answers
/// `.becomeDownload` to the response.
///
/// A download can go on where it stopped: ``cancel(byProducingResumeData:)`` and the error of a
/// download whose connection was lost or timed out (``SessionError/resumeData``) hand out resume
/// data, and ``Session/downloadTask(withResumeData:on:)`` makes a task that asks for the rest
/// (`Range` with `If-Range`) and appends it to the partial file.
public final class DownloadTask: SessionTask, @unchecked Sendable {
    /// Cancels the download and hands `completionHandler` resume data, or nil when the download
    /// cannot be resumed (not a GET; no strong ETag or Last-Modified; the server does not take
    /// byte ranges; nothing written yet; the task already ended). The task then completes with
    /// `cancelled`, its error carrying the same resume data.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        let action = observed.withLock { $0.lifecycle.cancel() }
        onLoop { [self] in
            guard action == .cancel, !isDone else {
                completionHandler(nil)
                return
            }
            abandonExchange()
            keepWhatArrived()
            engine.machine.dropHeldPieces()
            cancelWatchdog()
            produceResumeData { [self] data in
                completionHandler(data)
                var error = SessionError(.cancelled, engine.request?.url ?? originalRequest?.url, "the task was cancelled")
                error.resumeData = data
                complete(with: error)
            }
        }
    }

    /// Removes the partial file that `resumeData` keeps, for resume data that will not be used
    /// (nothing happens for bytes that are not Tollgate resume data).
    public static func discard(resumeData: Data) {
        guard let path = DownloadResumeData.partialFile(in: resumeData) else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// ``cancel(byProducingResumeData:)`` for async code.
    public func cancelByProducingResumeData() async -> Data? {
        await withCheckedContinuation { continuation in
            cancel { continuation.resume(returning: $0) }
        }
    }
}
