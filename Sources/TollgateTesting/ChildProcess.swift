import Foundation
import NIOConcurrencyHelpers

/// A process run for a test, its standard output and error collected as they arrive.
public final class ChildProcess: Sendable {
    private let process: Process
    private let output = NIOLockedValueBox(Output())
    private let stdoutPipe: Pipe
    private let stderrPipe: Pipe

    /// What the process wrote on its two pipes.
    private struct Output {
        var stdout = Stream()
        var stderr = Stream()
        /// Readers between taking bytes from a pipe and adding them here.
        var reading = 0
    }

    /// One pipe's bytes so far, and whether it reached its end.
    private struct Stream {
        var bytes: [UInt8] = []
        var ended = false
    }

    /// Starts `executable` with `arguments`; proxy variables are removed from its environment and
    /// `environment` is added to it.
    public init(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
        ] {
            environment[name] = nil
        }
        environment.merge(extra) { $1 }
        process.environment = environment
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        self.process = process
        self.stdoutPipe = stdout
        self.stderrPipe = stderr
        Self.collect(stdout, into: \.stdout, of: output)
        Self.collect(stderr, into: \.stderr, of: output)
        try process.run()
    }

    /// Appends what arrives on `pipe` to one of `output`'s streams, and marks its end, from a
    /// thread of its own that waits in `poll` and reads: Foundation's `readabilityHandler` runs on
    /// a dispatch source, and libdispatch on Linux crashed the test process in
    /// `_dispatch_event_loop_drain` (swiftlang/swift-subprocess#47), missed ends and stopped after
    /// 64 KiB at times.
    private static func collect(
        _ pipe: Pipe,
        into stream: any WritableKeyPath<Output, Stream> & Sendable,
        of output: NIOLockedValueBox<Output>
    ) {
        let descriptor = pipe.fileHandleForReading.fileDescriptor
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, -1)
                if polled < 0 && errno == EINTR { continue }
                // Counted from before the read until its bytes are here: between the two they are
                // in neither the pipe nor the output (see waitForExit).
                output.withLockedValue { $0.reading += 1 }
                let count = polled < 0 ? -1 : buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR {
                    output.withLockedValue { $0.reading -= 1 }
                    continue
                }
                output.withLockedValue {
                    if count > 0 { $0[keyPath: stream].bytes += buffer[0..<count] } else { $0[keyPath: stream].ended = true }
                    $0.reading -= 1
                }
                if count <= 0 { return }
            }
        }
        reader.name = "ChildProcess pipe"
        reader.start()
    }

    /// Bytes waiting in `pipe` to be read (FIONREAD).
    private static func unreadBytes(_ pipe: Pipe) -> Int {
        var count: Int32 = 0
        return ioctl(pipe.fileHandleForReading.fileDescriptor, UInt(FIONREAD), &count) == 0 ? Int(count) : 1
    }

    /// The process's identifier.
    public var processIdentifier: Int32 { process.processIdentifier }

    public var standardOutput: String { String(decoding: output.withLockedValue { $0.stdout.bytes }, as: UTF8.self) }
    public var standardError: String { String(decoding: output.withLockedValue { $0.stderr.bytes }, as: UTF8.self) }

    /// The lines of standard output written whole so far (ended by a newline): a line a test waits
    /// for may arrive in pieces (`print` in an unbuffered Python writes each argument on its own).
    public var completeOutputLines: [String] {
        let text = standardOutput
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The first whole line of standard output that begins with `prefix`, if one has arrived.
    public func outputLine(startingWith prefix: String) -> String? {
        completeOutputLines.first { $0.hasPrefix(prefix) }
    }
    public var isRunning: Bool { process.isRunning }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// Sends SIGTERM.
    public func terminate() { process.terminate() }

    /// Sends a signal.
    public func send(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    /// Sends SIGKILL if the process still runs (cleanup after a failed test).
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits for the process to exit and returns its exit status (a signal counts as a failure: -signal).
    public func waitForExit(timeout: Duration = .seconds(20)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw ChildProcessTimeout(timeout: timeout) }
            try await Task.sleep(for: .milliseconds(20))
        }
        // The last output arrives through the readers after the exit: wait for both pipes' ends —
        // or, since a process spawned meanwhile may hold a pipe's write end, until nothing is
        // left in either pipe and no reader holds bytes it took out of one. The process has
        // exited, so no more bytes come: checked under the lock the readers count themselves in
        // by, that is all of it. A grandchild still writing (a daemon a script started) is given
        // up on after five seconds.
        let drained = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < drained {
            let complete = output.withLockedValue {
                ($0.stdout.ended && $0.stderr.ended)
                    || ($0.reading == 0 && Self.unreadBytes(stdoutPipe) == 0 && Self.unreadBytes(stderrPipe) == 0)
            }
            if complete { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
    }

    /// Runs a process to its end and returns its status and output.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(executable, arguments, environment: environment)
        let status = try await child.waitForExit()
        return (status, child.standardOutput, child.standardError)
    }
}

/// A child process did not exit in time.
public struct ChildProcessTimeout: Error, CustomStringConvertible {
    public let timeout: Duration
    public var description: String { "the process did not exit within \(timeout)" }
}
