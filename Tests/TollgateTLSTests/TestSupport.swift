import Foundation
import TollgateTesting

/// A fresh directory under the system temporary directory, removed when `body` returns.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tollgate-tls-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// What a finished command printed.
struct CommandResult {
    var status: Int32
    var output: String
    var error: String
}

/// Runs a shell command line (for `openssl` cross-checks) and waits for it.
@discardableResult
func shell(_ command: String, in directory: URL? = nil) throws -> CommandResult {
    let result = try ChildProcess.runBlocking("/bin/sh", ["-c", command], directory: directory?.path)
    return CommandResult(status: result.status, output: result.stdout, error: result.stderr)
}

extension String {
    /// Writes the string to `url` as UTF-8.
    func write(to url: URL) throws {
        try self.write(to: url, atomically: false, encoding: .utf8)
    }
}

/// A fixed reference time for tests that need one: 2025-01-01T00:00:00Z.
let referenceDate = Date(timeIntervalSince1970: 1_735_689_600)

let day: TimeInterval = 86_400
