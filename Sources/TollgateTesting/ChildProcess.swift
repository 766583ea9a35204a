import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A process run for a test, its standard output and error collected as they arrive.
///
/// Started with `posix_spawn` and reaped by a thread of its own blocked in `waitpid` on its
/// identifier, not with Foundation's `Process`: that learns of an exit when a socket it gave the
/// child closes, so a child that replaced its descriptors (`systemd-socket-activate`), or another
/// process that inherited the socket (spawned by a test running alongside, before the exec),
/// made it wait for an exit that had happened — a curl seen running 20 s after it ended. Here the
/// child inherits nothing but its three standard descriptors (`posix_spawn_file_actions_addclosefrom_np`),
/// the pipes are close-on-exec on this side (no other child holds their write ends), and
/// signals are at their defaults in the child.
public final class ChildProcess: Sendable {
    /// The process's identifier.
    public let processIdentifier: Int32
    private let output = NIOLockedValueBox(Output())
    /// The exit status once `waitpid` reported it: the exit code, or -signal.
    private let status = NIOLockedValueBox<Int32?>(nil)
    private let stdoutDescriptor: Int32
    private let stderrDescriptor: Int32
    /// This side of the child's standard input, when it was asked for (-1 once closed).
    private let inputDescriptor: NIOLockedValueBox<Int32>

    /// What the process wrote on its two pipes.
    private struct Output {
        var stdout = Stream()
        var stderr = Stream()
        /// Readers between taking bytes from a pipe and adding them here.
        var reading = 0
    }

    /// One pipe's bytes so far, and whether it reached its end (its descriptor is then closed).
    private struct Stream {
        var bytes: [UInt8] = []
        var ended = false
    }

    /// Starts `executable` with `arguments` in `directory` (nil: this process's); proxy variables
    /// are removed from its environment and `environment` is added to it. With `input`, its
    /// standard input is a pipe written with ``writeInput(_:)`` (else `/dev/null`).
    /// - Throws: ``ChildProcessSpawnError`` when it cannot be started.
    public init(
        _ executable: String, _ arguments: [String], environment extra: [String: String] = [:], directory: String? = nil,
        input: Bool = false
    ) throws {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
        ] {
            environment[name] = nil
        }
        environment.merge(extra) { $1 }
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        guard Self.closeOnExecPipe(&stdoutPipe) == 0 else { throw ChildProcessSpawnError(executable: executable, code: errno) }
        guard Self.closeOnExecPipe(&stderrPipe) == 0 else {
            let code = errno
            for descriptor in stdoutPipe { close(descriptor) }
            throw ChildProcessSpawnError(executable: executable, code: code)
        }
        var inputPipe: [Int32] = [-1, -1]
        if input {
            // A write to a child that has exited is EPIPE to report, not a signal that ends the tests.
            _ = Self.ignoreBrokenPipes
            guard Self.closeOnExecPipe(&inputPipe) == 0 else {
                let code = errno
                for descriptor in stdoutPipe + stderrPipe { close(descriptor) }
                throw ChildProcessSpawnError(executable: executable, code: code)
            }
        } else {
            inputPipe[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
        defer {
            // The child's ends are the child's now (or nobody's, when it did not start).
            close(stdoutPipe[1])
            close(stderrPipe[1])
            if inputPipe[0] >= 0 { close(inputPipe[0]) }
        }
        let pid: pid_t
        do {
            pid = try Self.spawn(
                executable, arguments: arguments, environment: environment, directory: directory,
                descriptors: (inputPipe[0], stdoutPipe[1], stderrPipe[1])
            )
        } catch {
            close(stdoutPipe[0])
            close(stderrPipe[0])
            if inputPipe[1] >= 0 { close(inputPipe[1]) }
            throw error
        }
        inputDescriptor = NIOLockedValueBox(inputPipe[1])
        processIdentifier = pid
        stdoutDescriptor = stdoutPipe[0]
        stderrDescriptor = stderrPipe[0]
        Self.collect(stdoutDescriptor, into: \.stdout, of: output)
        Self.collect(stderrDescriptor, into: \.stderr, of: output)
        Self.reap(pid, into: status)
    }

    /// `posix_spawn` of `executable`, its standard input, output and error the three descriptors
    /// given, nothing else inherited, every signal at its default and none blocked.
    private static func spawn(
        _ executable: String, arguments: [String], environment: [String: String], directory: String?,
        descriptors: (input: Int32, output: Int32, error: Int32)
    ) throws(ChildProcessSpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let directory {
            guard let changeDirectory else { throw ChildProcessSpawnError(executable: executable, code: ENOSYS) }
            _ = changeDirectory(&actions, directory)
        }
        posix_spawn_file_actions_adddup2(&actions, descriptors.input, 0)
        posix_spawn_file_actions_adddup2(&actions, descriptors.output, 1)
        posix_spawn_file_actions_adddup2(&actions, descriptors.error, 2)
        _ = closeFrom?(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw ChildProcessSpawnError(executable: executable, code: code) }
        return pid
    }

    /// `pipe2(fds, O_CLOEXEC)`: both ends close-on-exec from the start, so no child another
    /// thread spawns meanwhile inherits them (`pipe` and then `fcntl` leave a window). Found by
    /// name, as Swift's Glibc module does not import it here.
    private static func closeOnExecPipe(_ descriptors: inout [Int32]) -> Int32 {
        guard let pipe2 else {
            guard pipe(&descriptors) == 0 else { return -1 }
            for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            return 0
        }
        return descriptors.withUnsafeMutableBufferPointer { pipe2($0.baseAddress, O_CLOEXEC) }
    }

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Swift's Glibc module does
    /// not import: found by name.
    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29), found by name as `closeFrom` is.
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    private static let changeDirectory: ChangeDirectory? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: ChangeDirectory.self)
    }

    /// SIGPIPE ignored in this process, once: writes to a child's closed input fail with EPIPE.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: CloseFrom.self)
    }

    /// Waits for `pid` to exit on a thread of its own, and records its status.
    private static func reap(_ pid: pid_t, into status: NIOLockedValueBox<Int32?>) {
        let waiter = Thread {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 {
                guard errno == EINTR else {
                    status.withLockedValue { $0 = -1 }
                    return
                }
            }
            // WIFEXITED and WEXITSTATUS are macros: the low seven bits are the signal (0: exited).
            let signal = raw & 0x7F
            status.withLockedValue { $0 = signal == 0 ? (raw >> 8) & 0xFF : -signal }
        }
        waiter.name = "ChildProcess waitpid"
        waiter.start()
    }

    /// Appends what arrives on `descriptor` to one of `output`'s streams, and marks its end
    /// (closing the descriptor), from a thread of its own that waits in `poll` and reads:
    /// Foundation's `readabilityHandler` runs on a dispatch source, and libdispatch on Linux
    /// crashed the test process in `_dispatch_event_loop_drain` (swiftlang/swift-subprocess#47),
    /// missed ends and stopped after 64 KiB at times.
    private static func collect(
        _ descriptor: Int32,
        into stream: any WritableKeyPath<Output, Stream> & Sendable,
        of output: NIOLockedValueBox<Output>
    ) {
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
                if count <= 0 {
                    // Closed only once `ended` says so: nothing looks at it after that.
                    close(descriptor)
                    return
                }
            }
        }
        reader.name = "ChildProcess pipe"
        reader.start()
    }

    /// Bytes waiting in the pipe on `descriptor` to be read (FIONREAD).
    private static func unreadBytes(_ descriptor: Int32) -> Int {
        var count: Int32 = 0
        return ioctl(descriptor, UInt(FIONREAD), &count) == 0 ? Int(count) : 1
    }

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

    /// Whether the process has not exited yet (not reaped).
    public var isRunning: Bool { status.withLockedValue { $0 == nil } }

    /// The process id.
    public var pid: Int32 { processIdentifier }

    /// Sends SIGTERM.
    public func terminate() { send(SIGTERM) }

    /// Sends a signal, unless the process was reaped (its identifier may be another's by then).
    public func send(_ signal: Int32) {
        status.withLockedValue { if $0 == nil { _ = Foundation.kill(processIdentifier, signal) } }
    }

    /// Sends SIGKILL if the process still runs (cleanup after a failed test).
    public func kill() { send(SIGKILL) }

    /// Writes `text` to the process's standard input (started with `input`); false when it could
    /// not (the process closed its end, or the input was closed).
    @discardableResult
    public func writeInput(_ text: String) -> Bool {
        inputDescriptor.withLockedValue { descriptor in
            guard descriptor >= 0 else { return false }
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                bytes = bytes.dropFirst(written)
            }
            return true
        }
    }

    /// Closes the process's standard input (it reads its end).
    public func closeInput() {
        inputDescriptor.withLockedValue { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    deinit {
        closeInput()
    }

    /// Waits for the process to exit and returns its exit status (a signal counts as a failure: -signal).
    public func waitForExit(timeout: Duration = .seconds(20)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { throw ChildProcessTimeout(timeout: timeout) }
            try await Task.sleep(for: .milliseconds(20))
        }
        // The last output arrives through the readers after the exit: wait for both pipes' ends —
        // or, since a process the child started may still hold a pipe's write end, until nothing
        // is left in either pipe and no reader holds bytes it took out of one. The process has
        // exited, so no more bytes come from it: checked under the lock the readers count
        // themselves in by, that is all of it. A grandchild still writing (a daemon a script
        // started) is given up on after five seconds.
        let drained = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < drained, !outputComplete {
            try await Task.sleep(for: .milliseconds(10))
        }
        return status.withLockedValue { $0 } ?? -1
    }

    /// ``waitForExit(timeout:)`` for synchronous callers (a probe in a static initializer, a
    /// test helper that is not async): blocks the calling thread.
    public func waitForExitBlocking(timeout: Duration = .seconds(20)) throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { throw ChildProcessTimeout(timeout: timeout) }
            usleep(5_000)
        }
        let drained = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < drained, !outputComplete { usleep(2_000) }
        return status.withLockedValue { $0 } ?? -1
    }

    /// Both pipes read to their ends, or empty with no reader holding bytes taken from one.
    private var outputComplete: Bool {
        output.withLockedValue {
            $0.reading == 0
                && ($0.stdout.ended || Self.unreadBytes(stdoutDescriptor) == 0)
                && ($0.stderr.ended || Self.unreadBytes(stderrDescriptor) == 0)
        }
    }

    /// Runs a process to its end, blocking the calling thread, and returns its status and output.
    public static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory)
        do {
            let status = try child.waitForExitBlocking(timeout: timeout)
            return (status, child.standardOutput, child.standardError)
        } catch {
            child.kill()
            throw error
        }
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

/// A child process could not be started.
public struct ChildProcessSpawnError: Error, CustomStringConvertible {
    /// The program.
    public let executable: String
    /// `posix_spawn`'s (or `pipe2`'s) error number.
    public let code: Int32
    public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
}
