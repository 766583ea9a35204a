import Foundation
import NIOCore
import Testing
@testable import TollgateProxy
import TollgateTesting

#if canImport(Glibc)
import Glibc
#endif

/// A free port on 127.0.0.1, released for the caller to bind (a ``ClosedPort`` held and let go).
private func freePort() -> Int {
    ClosedPort().port
}

/// A listening socket on 127.0.0.1, any port: its descriptor and port. `listens: false` leaves it
/// bound only.
private func listeningSocket(listens: Bool = true) throws -> (descriptor: CInt, port: Int) {
    try #require(LoopbackSocket.open(listening: listens))
}

@Suite("Sockets passed by a service manager (LISTEN_FDS)")
struct InheritedListenersTests {
    @Test("LISTEN_FDS counts for the process LISTEN_PID names, and for no other; a bad value is an error")
    func passedCount() throws {
        #expect(try InheritedListeners.passedCount(environment: [:], pid: 42) == 0)
        #expect(try InheritedListeners.passedCount(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2"], pid: 42) == 2)
        #expect(try InheritedListeners.passedCount(environment: ["LISTEN_PID": "41", "LISTEN_FDS": "2"], pid: 42) == 0)
        #expect(try InheritedListeners.passedCount(environment: ["LISTEN_FDS": "1"], pid: 42) == 1)
        #expect(throws: InheritedListeners.Failure.self) {
            try InheritedListeners.passedCount(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "two"], pid: 42)
        }
        #expect(throws: InheritedListeners.Failure.self) {
            try InheritedListeners.passedCount(environment: ["LISTEN_PID": "me", "LISTEN_FDS": "1"], pid: 42)
        }
    }

    @Test("A listening TCP socket's address is read; a socket that only is bound, or a file, is refused")
    func checksEachDescriptor() throws {
        let listening = try listeningSocket()
        defer { close(listening.descriptor) }
        let address = try InheritedListeners.listeningAddress(of: listening.descriptor)
        #expect(address.ipAddress == "127.0.0.1" && address.port == listening.port)
        let bound = try listeningSocket(listens: false)
        defer { close(bound.descriptor) }
        #expect(throws: InheritedListeners.Failure.self) { try InheritedListeners.listeningAddress(of: bound.descriptor) }
        let file = open("/dev/null", O_RDONLY)
        defer { close(file) }
        #expect(throws: InheritedListeners.Failure.self) { try InheritedListeners.listeningAddress(of: file) }
    }

    @Test("A listener takes the socket of its IP address and port, once; a host name takes none")
    func matching() throws {
        let sockets = InheritedListeners([
            .init(descriptor: 3, address: try SocketAddress(ipAddress: "127.0.0.1", port: 3128)),
            .init(descriptor: 4, address: try SocketAddress(ipAddress: "::1", port: 9090)),
        ])
        #expect(sockets.take(ListenAddress(host: "localhost", port: 3128)) == nil)
        #expect(sockets.take(ListenAddress(host: "127.0.0.1", port: 3129)) == nil)
        #expect(sockets.take(ListenAddress(host: "127.0.0.1", port: 3128)) == 3)
        #expect(sockets.take(ListenAddress(host: "127.0.0.1", port: 3128)) == nil)
        #expect(sockets.untaken == ["[::1]:9090"])
        #expect(sockets.take(ListenAddress(host: "0:0:0:0:0:0:0:1", port: 9090)) == 4)
        #expect(sockets.untaken.isEmpty)
    }
}

/// `tollgate serve` started by `systemd-socket-activate` (systemd's own tool for socket
/// activation), which binds the sockets, waits for the first connection, then runs the program
/// with `LISTEN_PID`/`LISTEN_FDS`.
@Suite(
    "serve on sockets passed by systemd-socket-activate (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && executableOnPath("systemd-socket-activate") != nil && executableOnPath("curl") != nil && executableOnPath("python3") != nil)
)
struct SocketActivationTests {
    @Test("The listeners serve the passed sockets: the connection that started the proxy is answered, and a request through it goes out")
    func servesPassedSockets() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "from the origin") }
        defer { origin.stop() }
        let (proxyPort, adminPort) = (freePort(), freePort())
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:\(proxyPort)"
        admin:
          address: "127.0.0.1:\(adminPort)"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        """.write(to: config, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let activator = try startActivator(["-l", "127.0.0.1:\(proxyPort)", "-l", "127.0.0.1:\(adminPort)", binary, "serve", "--config", config.path])
        defer { activator.kill() }
        try await eventually("the sockets listen") { activator.standardError.contains("as 4") || !activator.isRunning }
        #expect(!activator.standardError.contains("tollgate"), "nothing runs before the first connection: \(activator.standardError)")
        // Made before the proxy exists: it waits in the passed socket's queue and is answered.
        let health = try await ChildProcess.run(
            "/usr/bin/curl", ["-s", "--max-time", "20", "-w", " %{http_code}", "http://127.0.0.1:\(adminPort)/healthz"]
        )
        #expect(health.stdout.hasSuffix(" 200"), "\(health.stdout) \(activator.standardError)")
        #expect(activator.standardOutput.contains("listening on 127.0.0.1:\(proxyPort) (forward)"), "\(activator.standardOutput)")
        let fetched = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-s", "--max-time", "10", "-x", "http://127.0.0.1:\(proxyPort)", "http://127.0.0.1:\(origin.port)/page"]
        )
        #expect(fetched.stdout == "from the origin", "\(fetched.stderr) \(activator.standardError)")
        #expect(origin.requestCount == 1)
    }

    @Test("A passed socket that no listener names stops serve with an error that names it")
    func unnamedSocketIsAnError() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (proxyPort, strayPort) = (freePort(), freePort())
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:\(proxyPort)"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        """.write(to: config, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let activator = try startActivator(["-l", "127.0.0.1:\(proxyPort)", "-l", "127.0.0.1:\(strayPort)", binary, "serve", "--config", config.path])
        defer { activator.kill() }
        try await eventually("the sockets listen") { activator.standardError.contains("as 4") || !activator.isRunning }
        let poke = try await RawClient.connect(port: strayPort)
        defer { poke.close() }
        #expect(try await activator.waitForExit() == 1)
        #expect(
            activator.standardError.contains("passed a listening socket on 127.0.0.1:\(strayPort) (LISTEN_FDS) that no listen[].address or admin.address names"),
            "\(activator.standardError)"
        )
        #expect(!activator.standardOutput.contains("listening on"), "nothing was served: \(activator.standardOutput)")
    }
}

/// `systemd-socket-activate ARGUMENTS`, a child of the test like any other: ``ChildProcess``
/// reaps it by its own `waitpid`, so the activator replacing its descriptors with the sockets it
/// passes before it execs the program changes nothing (Foundation's `Process`, which learns of an
/// exit when a socket it gave the child closes, waited here for an exit that had not happened).
private func startActivator(_ arguments: [String]) throws -> ChildProcess {
    try ChildProcess("/usr/bin/systemd-socket-activate", arguments)
}
