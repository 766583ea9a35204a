import Foundation
import Testing
import TollgateProxy
import TollgateTesting

/// The built `tollgate` executable: next to the test bundle in the build products directory,
/// else `.build/debug/tollgate` of the package this file belongs to.
private let tollgateBinary: String? = {
    var candidates: [URL] = []
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("tollgate"))
    }
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("tollgate"))
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    candidates.append(packageRoot.appendingPathComponent(".build/debug/tollgate"))
    return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
}()

@Suite("tollgate serve (the built executable)", .timeLimit(.minutes(1)))
struct ServeCommandTests {
    @Test(
        "serve --listen 127.0.0.1:0 prints its listening line, proxies a request, and exits 0 on SIGTERM",
        .enabled(
            if: tollgateBinary != nil,
            "the tollgate executable was not found next to the tests or in .build/debug"
        )
    )
    func serveProxiesAndStopsOnSIGTERM() async throws {
        let binary = try #require(tollgateBinary)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, body: "through the binary")
        }
        defer { origin.stop() }
        let child = try ChildProcess(binary, ["serve", "--listen", "127.0.0.1:0"])
        defer { child.kill() }
        try await eventually("the listening line") { child.standardOutput.contains("\n") || !child.isRunning }
        let line = child.standardOutput
        let match = try #require(
            line.wholeMatch(of: #/listening on 127\.0\.0\.1:(\d+) \(forward\)\n/#),
            "stdout: \(line.debugDescription), stderr: \(child.standardError)"
        )
        let port = try #require(Int(match.1))
        #expect(port != 0)

        let client = try await RawClient.connect(port: port)
        defer { client.close() }
        try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(try await client.waitForResponses(1).first)
        #expect(response.status == 200)
        #expect(response.bodyText == "through the binary")

        child.terminate()
        let status = try await child.waitForExit()
        #expect(status == 0)
        #expect(child.standardOutput == line, "exactly one line on stdout")
        #expect(child.standardError.contains("\"GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\" 200 18"))
    }

    @Test(
        "serve --config exits 1 saying the option is not supported yet",
        .enabled(
            if: tollgateBinary != nil,
            "the tollgate executable was not found next to the tests or in .build/debug"
        )
    )
    func configIsNotSupported() async throws {
        let binary = try #require(tollgateBinary)
        let result = try await ChildProcess.run(binary, ["serve", "--config", "/nonexistent.yaml"])
        #expect(result.status == 1)
        #expect(result.stderr == "tollgate: --config is not supported yet by this build\n")
        #expect(result.stdout.isEmpty)
    }

    @Test(
        "serve on an address in use exits 1 naming the address",
        .enabled(
            if: tollgateBinary != nil,
            "the tollgate executable was not found next to the tests or in .build/debug"
        )
    )
    func addressInUse() async throws {
        let binary = try #require(tollgateBinary)
        try await withProxy { proxy in
            let result = try await ChildProcess.run(binary, ["serve", "--listen", "127.0.0.1:\(proxy.port)"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("cannot listen on 127.0.0.1:\(proxy.port)"))
            #expect(result.stderr.lowercased().contains("in use"))
            #expect(result.stdout.isEmpty)
        }
    }

    @Test(
        "Bad arguments exit 1",
        .enabled(
            if: tollgateBinary != nil,
            "the tollgate executable was not found next to the tests or in .build/debug"
        )
    )
    func badArguments() async throws {
        let binary = try #require(tollgateBinary)
        let badListen = try await ChildProcess.run(binary, ["serve", "--listen", "nowhere"])
        #expect(badListen.status == 1)
        #expect(badListen.stderr.hasPrefix("tollgate: --listen:"))
        let unknown = try await ChildProcess.run(binary, ["serve", "--bogus"])
        #expect(unknown.status == 1)
    }
}
