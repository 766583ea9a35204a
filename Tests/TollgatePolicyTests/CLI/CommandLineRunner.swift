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
        let process = try ChildProcess(binary, arguments, environment: changes, directory: directory)
        // Waits without holding a thread: the suite runs tests in parallel on a pool as wide as
        // the machine's cores, and a test blocking one of them starves the others' timers.
        do {
            let status = try await process.waitForExit(timeout: .seconds(timeout))
            return Result(status: status, stdout: process.standardOutput, stderr: process.standardError)
        } catch {
            process.terminate()
            throw RunnerError(message: "tollgate \(arguments.joined(separator: " ")) ran longer than \(timeout) s")
        }
    }

    struct RunnerError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
