public import NIOCore

/// A data task's own delegate that can take a stored response body as a `FileRegion`, written
/// to its destination with `sendfile` instead of being read into memory piece by piece.
///
/// Offered only for a body the cache serves from its file, to the task's own delegate (not the
/// session delegate), for a data task without a completion handler, once the response was
/// allowed and before any of the body was read. When ``dataTask(_:acceptsFileRegionOf:)``
/// answers false (or the delegate does not adopt this protocol), the body arrives as usual
/// through `dataTask(_:didReceive:)`.
public protocol StoredFileReceiving: DataTaskDelegate {
    /// Whether the delegate takes the whole stored body, `length` bytes, as one file region now.
    func dataTask(_ task: DataTask, acceptsFileRegionOf length: Int64) -> Bool

    /// The stored body as a file region. The file stays open until `done` is called: call it
    /// once, from any thread, when the region was written (nil) or could not be (the error).
    /// The task completes after `done`.
    func dataTask(_ task: DataTask, didReceive region: FileRegion, done: @escaping @Sendable ((any Error)?) -> Void)
}
