public import TollgateHTTP

/// A data task delegate that decides on a response head at once, returning its disposition
/// instead of calling a completion handler later.
///
/// `dataTask(_:didReceive:completionHandler:)` lets a delegate answer from any thread at any
/// time, so the task pauses its reads and keeps a pending question for every response. A
/// delegate that always answers during the call (the proxy's client exchange) adopts this
/// protocol, and the task asks it directly: no pending question, no pause. Used only when the
/// adopter is the first receiver of the task's data messages; its `completionHandler` variant
/// should answer with the same decision, for callers that use it.
public protocol ImmediateResponseDeciding: DataTaskDelegate {
    /// The disposition for `response`, decided now (as `dataTask(_:didReceive:completionHandler:)`
    /// would answer it).
    func dataTask(_ task: DataTask, decideOn response: HTTPResponseHead) -> ResponseDisposition
}

extension ImmediateResponseDeciding {
    public var asImmediateResponseDecider: (any ImmediateResponseDeciding)? { self }
}
