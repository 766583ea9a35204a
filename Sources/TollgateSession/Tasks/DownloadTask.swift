/// A task that writes the response body to a temporary file (`URLSessionDownloadTask`).
///
/// Its delegate gets `didWriteData` as the file grows and `didFinishDownloadingTo` at the end;
/// the file is removed after that call returns. A data task becomes one when its delegate answers
/// `.becomeDownload` to the response.
public final class DownloadTask: SessionTask, @unchecked Sendable {}
