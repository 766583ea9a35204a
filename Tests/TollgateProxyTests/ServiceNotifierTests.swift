import Foundation
import Testing
import TollgateTesting

#if canImport(Glibc)
import Glibc
#endif

/// `tollgate serve` under a service manager: the sd_notify messages it sends to the unix datagram
/// socket named by `NOTIFY_SOCKET` (systemd's `Type=notify`), received here on a socket the test
/// binds itself.
@Suite(
    "serve and NOTIFY_SOCKET (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ServiceNotifierTests {
    @Test(
        "serve sends READY=1 once its listeners accept, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1 after SIGTERM"
    )
    func readyReloadingStoppingOnAPathSocket() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let socketPath = directory.appendingPathComponent("notify").path
        let socket = try NotifySocket(path: socketPath)
        let configuration = try writeConfiguration(in: directory)
        let served = try ChildProcess(
            try #require(tollgateBinary),
            ["serve", "--config", configuration.path],
            environment: [
                "NOTIFY_SOCKET": socketPath,
                "XDG_CACHE_HOME": directory.appendingPathComponent("xdg").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            ]
        )
        defer { served.kill() }

        let ready = try await socket.next()
        #expect(ready.lines.contains("READY=1"), "\(ready.lines)")
        // READY comes after the listening lines, and the listener named there accepts. (The
        // lines were written first, but this process reads the pipe on its own time: a slow
        // build, under ASan, had READY in hand before them.)
        try await eventually("the listening lines") { served.standardOutput.contains("(admin)") }
        let printed = served.standardOutput
        let line = try #require(printed.firstMatch(of: #/listening on 127\.0\.0\.1:(\d+) \(forward\)/#))
        let port = try #require(Int(line.1))
        #expect(printed.contains("(admin)"), "\(printed)")
        #expect(
            ready.lines.contains { $0.hasPrefix("STATUS=listening on 127.0.0.1:\(port) (forward)") },
            "\(ready.lines)"
        )
        let client = try await RawClient.connect(host: "127.0.0.1", port: port)
        client.close()

        served.send(SIGHUP)
        let reloading = try await socket.next()
        #expect(reloading.lines.first == "RELOADING=1", "\(reloading.lines)")
        #expect(reloading.lines.contains { $0.hasPrefix("MONOTONIC_USEC=") }, "\(reloading.lines)")
        let readyAgain = try await socket.next()
        #expect(readyAgain.lines.first == "READY=1", "\(readyAgain.lines)")
        try await eventually("the reload's message") { served.standardError.contains("configuration reloaded") }

        served.terminate()
        let stopping = try await socket.next()
        #expect(stopping.lines.first == "STOPPING=1", "\(stopping.lines)")
        #expect(try await served.waitForExit() == 0)
        #expect(socket.pending().isEmpty, "nothing after STOPPING=1")
    }

    @Test("serve sends READY=1 and STOPPING=1 to an abstract-namespace NOTIFY_SOCKET (@name)")
    func readyAndStoppingOnAnAbstractSocket() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let name = "tollgate-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        let socket = try NotifySocket(abstractName: name)
        let configuration = try writeConfiguration(in: directory)
        let served = try ChildProcess(
            try #require(tollgateBinary),
            ["serve", "--config", configuration.path],
            environment: [
                "NOTIFY_SOCKET": "@" + name,
                "XDG_CACHE_HOME": directory.appendingPathComponent("xdg").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            ]
        )
        defer { served.kill() }

        #expect(try await socket.next().lines.first == "READY=1")
        served.terminate()
        #expect(try await socket.next().lines.first == "STOPPING=1")
        #expect(try await served.waitForExit() == 0)
    }

    @Test("serve with a NOTIFY_SOCKET that is not a socket address warns on standard error and serves anyway")
    func unusableNotifySocketIsAWarning() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try writeConfiguration(in: directory)
        let served = try ChildProcess(
            try #require(tollgateBinary),
            ["serve", "--config", configuration.path],
            environment: [
                "NOTIFY_SOCKET": "relative/notify",
                "XDG_CACHE_HOME": directory.appendingPathComponent("xdg").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            ]
        )
        defer { served.kill() }
        try await eventually("the listening lines") { served.standardOutput.contains("(admin)") || !served.isRunning }
        #expect(served.isRunning)
        // Standard error is read apart from standard output: the warning may come after the lines.
        try await eventually("the warning") { served.standardError.contains("NOTIFY_SOCKET=relative/notify") }
        served.terminate()
        #expect(try await served.waitForExit() == 0)
    }

    /// A forward listener and the admin API on 127.0.0.1, any free ports, a cache in `directory`.
    private func writeConfiguration(in directory: URL) throws -> URL {
        let file = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: forward
        admin:
          address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        log:
          access: "off"
        """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }
}

/// A unix datagram socket the test binds, as a service manager's notification socket; read
/// without blocking.
final class NotifySocket: Sendable {
    /// One datagram: its `KEY=VALUE` lines.
    struct Message {
        var lines: [String]
    }

    private let descriptor: Int32

    /// Binds `path` (removed again when the socket closes).
    convenience init(path: String) throws {
        try self.init(address: Array(path.utf8) + [0], unlink: path)
    }

    /// Binds `name` in the abstract namespace (a leading NUL, no terminator).
    convenience init(abstractName name: String) throws {
        try self.init(address: [0] + Array(name.utf8), unlink: nil)
    }

    private let unlinkPath: String?

    private init(address: [UInt8], unlink: String?) throws {
        descriptor = socket(
            AF_UNIX,
            Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        unlinkPath = unlink
        guard descriptor >= 0 else { throw SocketFailure(call: "socket", code: errno) }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        precondition(address.count <= MemoryLayout.size(ofValue: storage.sun_path))
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: address) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + address.count)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw SocketFailure(call: "bind", code: code)
        }
    }

    deinit {
        close(descriptor)
        if let unlinkPath { unlink(unlinkPath) }
    }

    /// The datagrams that have arrived and were not taken by ``next(timeout:)``, without waiting.
    func pending() -> [Message] {
        queue.append(receiveAvailable())
        var messages: [Message] = []
        while let message = queue.popFirst() { messages.append(message) }
        return messages
    }

    /// Reads every datagram waiting on the socket.
    private func receiveAvailable() -> [Message] {
        var messages: [Message] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            messages.append(Message(lines: text.split(separator: "\n").map(String.init)))
        }
        return messages
    }

    private let queue = LockedMessages()

    /// The next datagram, waiting at most `timeout`.
    func next(timeout: Duration = .seconds(15)) async throws -> Message {
        let deadline = ContinuousClock.now + timeout
        while true {
            queue.append(receiveAvailable())
            if let message = queue.popFirst() { return message }
            guard ContinuousClock.now < deadline else { throw WaitTimeout(what: "a datagram on the notify socket") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Datagrams received but not yet taken.
private final class LockedMessages: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [NotifySocket.Message] = []

    func append(_ more: [NotifySocket.Message]) {
        lock.withLock { messages += more }
    }

    func popFirst() -> NotifySocket.Message? {
        lock.withLock { messages.isEmpty ? nil : messages.removeFirst() }
    }
}

struct SocketFailure: Error, CustomStringConvertible {
    var call: String
    var code: Int32
    var description: String { "\(call): \(String(cString: strerror(code)))" }
}
