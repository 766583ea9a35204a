/// A data task's own delegate that is told when the response body arrived whole, before the task
/// completes.
///
/// A task that stores its response completes only once the entry is committed: off the loop,
/// with the store's fsyncs, which take a millisecond on a fast disk and far longer on a slow
/// one. A proxy need not hold its client for that: it can end the client's response here and
/// write its log line at the completion, which still says whether the entry was stored.
///
/// Told only to the task's own delegate (not the session delegate), on the task's event loop,
/// when a whole response is being stored: a body that was not stored completes the task at once,
/// and a range response completing a stored partial one is not the task's whole response.
/// Nothing of the body follows this message; the completion does (`didCompleteWithError` with
/// nil, or `cancelled` when the task is cancelled while `willCacheResponse` is asked).
public protocol BodyEndReceiving: DataTaskDelegate {
    /// The body of `task`'s response has arrived whole and was delivered to the delegate; the task
    /// completes when storing it is settled.
    func dataTaskDidReceiveWholeBody(_ task: DataTask)
}
