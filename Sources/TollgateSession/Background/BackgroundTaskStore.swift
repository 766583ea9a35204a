import Foundation
import NIOConcurrencyHelpers
import Synchronization
import TollgateStore

import Glibc

/// Where a background session keeps its tasks: under `ROOT/IDENTIFIER/`, an LMDB environment
/// (database `tasks`: one ``BackgroundTaskRecord`` per task, keyed by its identifier), `files/`
/// (downloads' partial files, copies of uploads' files) and `session.lock`.
///
/// One live session per identifier: the lock file is held with `flock` for the session's life,
/// and `flock` refuses a second holder whether it is another process or this one (each open
/// of the file is its own holder) — so two sessions never write one store.
///
/// Every change is one write of the whole record through the environment's single writer, in
/// the order made, each in one transaction: a process killed at any moment leaves each record
/// as it was after some write. Progress is written at most every ``progressBytes`` or
/// ``progressInterval``, whichever comes first.
final class BackgroundTaskStore: Sendable {
    /// Progress is written when this many more bytes arrived since the last write…
    static let progressBytes: Int64 = 4 << 20
    /// …or this long after it.
    static let progressInterval: TimeInterval = 2

    let directory: String
    let filesDirectory: String
    private let environment: PrivateEnvironment
    private let tasks: Database
    private let lockDescriptor: Int32

    private struct Progress {
        var bytes: Int64
        var date: Date
    }

    private struct State {
        var records: [Int: BackgroundTaskRecord] = [:]
        var progress: [Int: Progress] = [:]
        var closed = false
    }

    private let state = Mutex(State())
    /// Held while closing, so that every caller of ``close()`` returns only once it is closed.
    /// A plain lock (no value to guard): under ThreadSanitizer a lock around a `Void` value made
    /// each `withLock` an access to a zero-sized value, which TSan reported as a race with the
    /// unlocked read of the lock's own storage (`make test-tsan`, session 17).
    private let closing = NIOLock()

    /// The default root: `background/` in the data directory.
    static func defaultRoot() -> String { DataDirectory.path() + "/background" }

    /// A directory name for any identifier: letters, digits, `.`, `-` and `_` kept, every other
    /// byte as `%XX` (so distinct identifiers never share a directory).
    static func directoryName(for identifier: String) -> String {
        var name = ""
        for byte in identifier.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                name.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: ".") where !name.isEmpty:
                name.append(".")
            default:
                name += String(format: "%%%02X", byte)
            }
        }
        return name.isEmpty ? "%" : name
    }

    /// Opens (creating) the store of `identifier` under `root` and takes its lock.
    ///
    /// - Throws: `backgroundSessionInUse` when another live session (this process or another)
    ///   holds it; `cannotWriteToFile` when the directory or store cannot be made.
    init(root: String, identifier: String) throws(SessionError) {
        let directory = root + "/" + Self.directoryName(for: identifier)
        self.directory = directory
        self.filesDirectory = directory + "/files"
        for path in [root, directory, filesDirectory] {
            if mkdir(path, 0o700) != 0, errno != EEXIST {
                throw SessionError(.cannotWriteToFile, nil, "background session \(identifier): cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        let lockPath = directory + "/session.lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SessionError(.cannotWriteToFile, nil, "background session \(identifier): cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(descriptor)
            throw SessionError(
                .backgroundSessionInUse, nil,
                "background session \(identifier) is in use by another live session (in this process or another; \(lockPath) is locked)"
            )
        }
        do {
            environment = try PrivateEnvironment(path: directory)
            tasks = try environment.environment.openDatabase(named: "tasks")
        } catch {
            Glibc.close(descriptor)
            throw SessionError(.cannotWriteToFile, nil, "background session \(identifier): cannot open its store in \(directory): \(error)")
        }
        lockDescriptor = descriptor
        let loaded = (try? environment.environment.read { txn in
            try txn.entries(in: tasks) as [(key: UInt64, value: Data)]
        }) ?? []
        var records: [Int: BackgroundTaskRecord] = [:]
        for (key, value) in loaded {
            if let record = BackgroundTaskRecord.decode(value), record.identifier == Int(key) { records[record.identifier] = record }
        }
        state.withLock { $0.records = records }
    }

    /// The records found when the store was opened and written since, by task identifier.
    var records: [BackgroundTaskRecord] {
        state.withLock { $0.records.values.sorted { $0.identifier < $1.identifier } }
    }

    func record(_ identifier: Int) -> BackgroundTaskRecord? {
        state.withLock { $0.records[identifier] }
    }

    /// Writes a new or replaced record.
    func put(_ record: BackgroundTaskRecord) {
        let written = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.records[record.identifier] = record
            state.progress[record.identifier] = Progress(bytes: record.bytesReceived, date: Date())
            return true
        }
        if written { submitPut(record) }
    }

    /// Changes the record of `identifier` (nothing when there is none) and writes it.
    func update(_ identifier: Int, _ change: (inout BackgroundTaskRecord) -> Void) {
        let changed = state.withLock { state -> BackgroundTaskRecord? in
            guard !state.closed, var record = state.records[identifier] else { return nil }
            change(&record)
            guard record != state.records[identifier] else { return nil }
            state.records[identifier] = record
            state.progress[identifier] = Progress(bytes: record.bytesReceived, date: Date())
            return record
        }
        if let changed { submitPut(changed) }
    }

    /// A download's file grew to `bytes`: written when enough bytes or time passed since the last
    /// write, or at once when `force`.
    func progress(_ identifier: Int, bytes: Int64, expectedTotal: Int64, force: Bool = false) {
        let now = Date()
        let due = state.withLock { state -> BackgroundTaskRecord? in
            guard !state.closed, var record = state.records[identifier] else { return nil }
            record.bytesReceived = bytes
            record.expectedTotalBytes = expectedTotal
            state.records[identifier] = record
            let last = state.progress[identifier] ?? Progress(bytes: 0, date: .distantPast)
            guard force || bytes - last.bytes >= Self.progressBytes || now.timeIntervalSince(last.date) >= Self.progressInterval else { return nil }
            state.progress[identifier] = Progress(bytes: bytes, date: now)
            return record
        }
        if let due { submitPut(due) }
    }

    /// Forgets the task: its record goes, and the copy of an upload's file with it.
    func remove(_ identifier: Int) {
        let removed = state.withLock { state -> BackgroundTaskRecord? in
            guard !state.closed else { return nil }
            state.progress[identifier] = nil
            return state.records.removeValue(forKey: identifier)
        }
        guard let removed else { return }
        if let upload = removed.uploadFile { try? FileManager.default.removeItem(atPath: upload) }
        let tasks = self.tasks
        environment.writer.submit({ txn in _ = try txn.delete(UInt64(identifier), in: tasks) }, completion: { _ in })
    }

    /// A new file in the session's own storage.
    func newFilePath(_ prefix: String, task identifier: Int) -> String {
        filesDirectory + "/\(prefix)-\(identifier)-\(UUID().uuidString)"
    }

    /// Waits for every write so far, closes the store and lets the lock go; returns once that is
    /// done, whoever started it. Not on an event loop.
    func close() {
        closing.withLock {
            let first = state.withLock { state -> Bool in
                defer { state.closed = true }
                return !state.closed
            }
            guard first else { return }
            environment.close()
            flock(lockDescriptor, LOCK_UN)
            Glibc.close(lockDescriptor)
        }
    }

    private func submitPut(_ record: BackgroundTaskRecord) {
        let tasks = self.tasks
        let bytes = record.encoded()
        environment.writer.submit({ txn in try txn.put(UInt64(record.identifier), bytes, in: tasks) }, completion: { _ in })
    }
}
