import NIOCore
import TollgateSession

/// The upstream side of a ``StreamRelay``: what the relay asks of the stream task it carries
/// bytes to and from. ``StreamTask`` is the one the proxy uses; a test drives the relay with a
/// scripted upstream instead (reads answered when it says, writes taken or failed).
protocol RelayUpstream: AnyObject {
    /// Reads at least `minLength`, at most `maxLength` bytes; the handler gets the bytes (nil:
    /// none), whether the upstream sent EOF, and an error. A `timeout` of zero waits forever.
    func readData(
        ofMinLength minLength: Int,
        maxLength: Int,
        timeout: Duration,
        completionHandler: @escaping @Sendable (ByteBuffer?, Bool, SessionError?) -> Void
    )
    /// Writes `data`; the handler runs once the upstream took it (or failed).
    func write(_ data: ByteBuffer, timeout: Duration, completionHandler: @escaping @Sendable (SessionError?) -> Void)
    /// Sends EOF to the upstream; reads go on.
    func closeWrite()
    /// Whether the upstream still runs (the relay cancels it when it ends first).
    var isRunning: Bool { get }
    /// Stops the upstream.
    func cancel()
}

extension StreamTask: RelayUpstream {
    var isRunning: Bool { state != .completed }
}
