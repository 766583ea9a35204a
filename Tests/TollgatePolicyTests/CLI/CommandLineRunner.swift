import Foundation
import TollgateTesting

/// Runs the built `tollgate` executable for the command-line tests.
enum CommandLineRunner {
    /// What a run printed and how it ended.
    struct Result: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        var description: String { "exit \(status)\nstdout:\n\(stdout)stderr:\n\(stderr)" }
    }

    /// The executable: next to the test bundle in the build products directory, else
    /// `.build/debug/tollgate` of the package these tests are built in.
    static let binary: String? = TollgateBinary.path

    /// Why the tests are skipped when there is no executable.
    static let notFound =
        "the tollgate executable was not found next to the tests or in .build/debug (swift build first)"

    /// Runs `tollgate ARGUMENTS` in `directory` to its end (at most `timeout`), with `environment`
    /// changes applied to this process's environment.
    static func run(
        _ arguments: [String],
        in directory: String? = nil,
        environment changes: [String: String] = [:],
        timeout: TimeInterval = 30
    ) async throws -> Result {
        guard let binary else { throw RunnerError(message: notFound) }
        let outputDirectory = NSTemporaryDirectory() + "tollgate-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: outputDirectory) }
        let stdoutPath = outputDirectory + "/stdout"
        let stderrPath = outputDirectory + "/stderr"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        guard let stdout = FileHandle(forWritingAtPath: stdoutPath),
            let stderr = FileHandle(forWritingAtPath: stderrPath)
        else { throw RunnerError(message: "cannot create output files in \(outputDirectory)") }
        defer {
            try? stdout.close()
            try? stderr.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in changes { environment[name] = value }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                throw RunnerError(message: "tollgate \(arguments.joined(separator: " ")) ran longer than \(timeout) s")
            }
            // Waits without holding a thread: the suite runs tests in parallel on a pool as wide as
            // the machine's cores, and a test blocking one of them starves the others' timers.
            try await Task.sleep(for: .milliseconds(10))
        }
        let status = process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
        return Result(
            status: status,
            stdout: String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self)
        )
    }

    struct RunnerError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
