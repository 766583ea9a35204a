import Foundation

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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    if let directory { process.currentDirectoryURL = directory }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    // Read before waiting so a full pipe cannot block the child.
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        error: String(decoding: errorData, as: UTF8.self)
    )
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
