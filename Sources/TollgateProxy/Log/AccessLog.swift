import Foundation
import NIOConcurrencyHelpers
public import TollgatePolicy

/// Where the access log goes and in which format: one line per exchange (``AccessLogEntry``).
///
/// Lines are handed to the writer in the order exchanges end; the standard writers write them on
/// their own queue, so a slow terminal, pipe or disk never stalls an event loop.
public struct AccessLog: Sendable {
    private let writeLine: @Sendable (String) -> Void
    private let flushLines: @Sendable () async -> Void
    private let reopenFile: (@Sendable () async -> OpenError?)?
    /// The line format.
    public var format: PolicyConfiguration.Log.Format
    /// Whether lines are dropped (`log.access: off`): they are then not even formatted.
    let isOff: Bool

    /// An access log that gives each line (without its newline) to `writeLine`; `flush` returns
    /// once every line given so far is written (the server awaits it at shutdown).
    public init(
        format: PolicyConfiguration.Log.Format = .combined,
        _ writeLine: @escaping @Sendable (String) -> Void,
        flush: @escaping @Sendable () async -> Void = {}
    ) {
        self.init(format: format, writeLine, flush: flush, reopen: nil)
    }

    private init(
        format: PolicyConfiguration.Log.Format,
        _ writeLine: @escaping @Sendable (String) -> Void,
        flush: @escaping @Sendable () async -> Void,
        reopen: (@Sendable () async -> OpenError?)?
    ) {
        self.format = format
        self.writeLine = writeLine
        self.flushLines = flush
        self.reopenFile = reopen
        self.isOff = false
    }

    private init(off format: PolicyConfiguration.Log.Format) {
        self.format = format
        self.writeLine = { _ in }
        self.flushLines = {}
        self.reopenFile = nil
        self.isOff = true
    }

    /// Writes lines to standard error in the combined format.
    public static let standardError = AccessLog.writing(to: .standardError)

    /// Writes nothing.
    public static let off = AccessLog(off: .combined)

    /// How long a line may wait in memory before the writer's queue writes it.
    static let batchInterval = DispatchTimeInterval.milliseconds(50)
    /// A batch this large is written at once, without waiting for ``batchInterval``.
    static let batchLimit = 256 * 1024

    /// Writes lines to a file handle on a queue of its own.
    ///
    /// Lines are gathered in memory and written in batches: the line that finds the batch empty
    /// asks the queue to write it ``batchInterval`` later (at once past ``batchLimit`` bytes), and
    /// the queue then writes every line gathered by then in one `write(2)`. Under load that is one
    /// wake-up and one write per interval instead of one per exchange: when the proxy runs on one
    /// core, waking the queue's thread for each line preempted the event loop each time (nginx's
    /// `access_log … buffer= flush=` makes the same trade). A line reaches the file at most that
    /// late; ``flush()`` (shutdown) writes what is gathered at once.
    public static func writing(to handle: FileHandle, format: PolicyConfiguration.Log.Format = .combined) -> AccessLog {
        writing(to: handle, format: format, reopening: nil)
    }

    /// ``writing(to:format:)``; `reopening` (a file's) opens the file again for ``reopen()``: the
    /// lines gathered go to the old file, later ones to the new.
    private static func writing(
        to handle: FileHandle, format: PolicyConfiguration.Log.Format, reopening: (@Sendable () -> Result<FileHandle, OpenError>)?
    ) -> AccessLog {
        let queue = DispatchQueue(label: "tollgate.access-log")
        let batch = NIOLockedValueBox(LineBatch())
        // Read and replaced on `queue` only.
        let target = NIOLockedValueBox(handle)
        let drain: @Sendable () -> Void = {
            let bytes = batch.withLockedValue { $0.take() }
            if !bytes.isEmpty { target.withLockedValue { $0 }.write(Data(bytes)) }
        }
        var reopen: (@Sendable () async -> OpenError?)?
        if let reopening {
            reopen = {
                await withCheckedContinuation { (done: CheckedContinuation<OpenError?, Never>) in
                    queue.async {
                        drain()
                        switch reopening() {
                        case .success(let fresh):
                            target.withLockedValue { $0 = fresh }  // the old handle closes as it goes
                            done.resume(returning: nil)
                        case .failure(let error):
                            done.resume(returning: error)
                        }
                    }
                }
            }
        }
        return AccessLog(
            format: format,
            { line in
                switch batch.withLockedValue({ $0.append(line, limit: batchLimit) }) {
                case .first: queue.asyncAfter(deadline: .now() + batchInterval, execute: drain)
                case .reachedLimit: queue.async(execute: drain)
                case .added: break
                }
            },
            flush: { await withCheckedContinuation { done in queue.async { drain(); done.resume() } } },
            reopen: reopen
        )
    }

    /// The access log `log` asks for (`log.access`, `log.format`); a file is opened for appending
    /// (created with mode 0640).
    ///
    /// - Throws: ``OpenError`` when the file cannot be opened.
    public static func open(_ log: PolicyConfiguration.Log) throws(OpenError) -> AccessLog {
        switch log.access {
        case .standardError: return .writing(to: .standardError, format: log.format)
        case .standardOutput: return .writing(to: .standardOutput, format: log.format)
        case .off: return AccessLog(off: log.format)
        case .file(let path):
            let open: @Sendable () -> Result<FileHandle, OpenError> = {
                let descriptor = Foundation.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
                guard descriptor >= 0 else {
                    return .failure(OpenError(description: "cannot open the access log \(path): \(String(cString: strerror(errno)))"))
                }
                return .success(FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
            }
            return .writing(to: try open().get(), format: log.format, reopening: open)
        }
    }

    /// Opens a file log again at its path (after `logrotate` moved it away: SIGUSR1 or SIGHUP);
    /// the lines gathered so far are written to the old file first. Nil when done (or when the log
    /// is not a file); the reason when the file could not be opened (lines keep going to the old one).
    public func reopen() async -> OpenError? {
        await reopenFile?()
    }

    /// Why an access log could not be opened.
    public struct OpenError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Logs one exchange.
    func record(_ entry: @autoclosure () -> AccessLogEntry) {
        guard !isOff else { return }
        let entry = entry()
        writeLine(format == .json ? entry.jsonLine : entry.combinedLogLine)
    }

    /// Returns once every line recorded so far is written.
    public func flush() async {
        await flushLines()
    }
}

/// Writes one line to standard error at once (diagnostics, not the access log).
func standardErrorLine(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Access-log lines waiting for the writer's queue.
private struct LineBatch {
    private var bytes: [UInt8] = []

    /// What adding a line made of the batch, and so whether the writer must be asked to write it.
    enum Appended {
        /// The batch was empty: a write must be scheduled.
        case first
        /// This line took the batch to `limit` bytes or past it: write now.
        case reachedLimit
        /// A write is already coming.
        case added
    }

    /// Adds a line (and its newline).
    mutating func append(_ line: String, limit: Int) -> Appended {
        let before = bytes.count
        bytes.append(contentsOf: line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        if before == 0 { return .first }
        return before < limit && bytes.count >= limit ? .reachedLimit : .added
    }

    /// Everything gathered so far; the batch is empty afterwards.
    mutating func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}
