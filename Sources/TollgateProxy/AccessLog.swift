import Foundation

/// Where the access log goes: one line per exchange (``AccessLogEntry``).
///
/// Lines are handed to the writer in the order exchanges end; the standard-error writer writes
/// them on its own queue so that a slow terminal or pipe never stalls an event loop.
public struct AccessLog: Sendable {
    private let writeLine: @Sendable (String) -> Void
    private let flushLines: @Sendable () async -> Void

    /// An access log that gives each line (without its newline) to `writeLine`; `flush` returns
    /// once every line given so far is written (the server awaits it at shutdown).
    public init(_ writeLine: @escaping @Sendable (String) -> Void, flush: @escaping @Sendable () async -> Void = {}) {
        self.writeLine = writeLine
        self.flushLines = flush
    }

    /// Writes lines to standard error.
    public static let standardError: AccessLog = {
        let queue = DispatchQueue(label: "tollgate.access-log")
        return AccessLog(
            { line in queue.async { FileHandle.standardError.write(Data((line + "\n").utf8)) } },
            flush: { await withCheckedContinuation { done in queue.async { done.resume() } } }
        )
    }()

    /// Writes nothing.
    public static let off = AccessLog { _ in }

    /// Logs one exchange.
    func record(_ entry: AccessLogEntry) {
        writeLine(entry.combinedLogLine)
    }

    /// Returns once every line recorded so far is written.
    public func flush() async {
        await flushLines()
    }
}
