import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTLS
import TollgateTesting

@testable import TollgateProxy

/// Runs a Python `h2` client script to its end; its output lines.
private func runClient(_ script: String, _ arguments: [String]) async throws -> [String] {
    let client = try HTTP2Peers.runPython(script, arguments)
    _ = try await client.waitForExit(timeout: .seconds(40))
    return client.standardOutput.split(separator: "\n").map(String.init)
        + (client.standardError.isEmpty ? [] : ["stderr: \(client.standardError)"])
}

private func plan(_ steps: [[String: Any]]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: steps), as: UTF8.self)
}

/// CONNECT on HTTP/2 streams (RFC 9113 §8.5), with Python's `h2` as the client: h2c to an
/// in-process forward proxy.
@Suite("CONNECT on HTTP/2 streams with Python h2", .timeLimit(.minutes(1)), .enabled(if: HTTP2Peers.hasPythonH2))
struct HTTP2TunnelTests {
    @Test(
        "Two tunnels and a GET share one connection: bytes both ways, half-close each way; denied and unreachable ports are answered"
    )
    func tunnelsOnStreams() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "plain \(request.target)")
        }
        defer { origin.stop() }
        let closed = ClosedPort()
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [echo.port, closed.port]
        try await withProxy(configuration: configuration, h2c: true) { proxy in
            let steps: [[String: Any]] = [
                ["connect": "127.0.0.1:\(echo.port)", "send": ["hello ", "world "]],
                ["connect": "127.0.0.1:\(echo.port)", "send": ["second "]],
                ["authority": "127.0.0.1:\(origin.port)", "path": "/a"],
                ["connect": "127.0.0.1:9"],
                ["connect": "127.0.0.1:\(closed.port)"],
            ]
            let lines = try await runClient(HTTP2Peers.connectTunnels, ["\(proxy.port)", "-", try plan(steps)])
            try #require(lines.count == 5, "\(lines)")
            // The echo server answers EOF with "bye" then its own EOF: the client's END_STREAM
            // reached it as a half-close, and its EOF came back as END_STREAM.
            #expect(lines[0] == "stream 1 status 200 ended data hello world bye")
            #expect(lines[1] == "stream 3 status 200 ended data second bye")
            #expect(lines[2] == "stream 5 status 200 ended data plain /a")
            #expect(lines[3].hasPrefix("stream 7 status 403 ended data "), "\(lines[3])")
            #expect(lines[3].contains("port 9 is not allowed"), "\(lines[3])")
            #expect(lines[4].hasPrefix("stream 9 status 502 ended"), "\(lines[4])")
            try await eventually("five access log lines") { proxy.accessLog.count == 5 }
            let log = proxy.accessLog
            #expect(log.filter { $0.contains("\"CONNECT 127.0.0.1:\(echo.port) HTTP/2.0\" 200") }.count == 2, "\(log)")
            #expect(log.contains { $0.contains("\"CONNECT 127.0.0.1:9 HTTP/2.0\" 403") }, "\(log)")
            #expect(log.contains { $0.contains("\"CONNECT 127.0.0.1:\(closed.port) HTTP/2.0\" 502") }, "\(log)")
            #expect(echo.receivedBytes.count == "hello world second ".utf8.count)
        }
    }

    @Test("A tunnel stream with no byte either way for tunnel-idle-timeout is reset with CONNECT_ERROR; the connection goes on")
    func idleTunnelStreamReset() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "plain \(request.target)")
        }
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [echo.port]
        configuration.limits.tunnelIdleTimeout = .milliseconds(400)
        try await withProxy(configuration: configuration, h2c: true) { proxy in
            let steps: [[String: Any]] = [
                ["connect": "127.0.0.1:\(echo.port)", "send": ["hello "], "close": false],
                ["authority": "127.0.0.1:\(origin.port)", "path": "/a"],
            ]
            let started = ContinuousClock.now
            let lines = try await runClient(HTTP2Peers.connectTunnels, ["\(proxy.port)", "-", try plan(steps)])
            try #require(lines.count == 2, "\(lines)")
            #expect(lines[0] == "stream 1 status 200 reset 10 data hello ")
            #expect(lines[1] == "stream 3 status 200 ended data plain /a")
            #expect(ContinuousClock.now - started >= .milliseconds(350))
            try await eventually("two access log lines") { proxy.accessLog.count == 2 }
            #expect(proxy.accessLog.contains { $0.contains("\"CONNECT 127.0.0.1:\(echo.port) HTTP/2.0\" 200 6 ") }, "\(proxy.accessLog)")
        }
    }

    @Test("A CONNECT on a reverse listener's stream is answered 405, and the connection goes on")
    func reverseRefuses() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let steps: [[String: Any]] = [["connect": "127.0.0.1:\(origin.port)"], ["authority": "gw", "path": "/x"]]
            let lines = try await runClient(HTTP2Peers.connectTunnels, ["\(proxy.port)", "-", try plan(steps)])
            try #require(lines.count == 2, "\(lines)")
            #expect(lines[0].hasPrefix("stream 1 status 405 ended"), "\(lines[0])")
            #expect(lines[1] == "stream 3 status 200 ended data ok")
        }
    }
}

/// A directory with a test CA's leaf for 127.0.0.1 and a `tollgate serve` configuration with one
/// TLS forward listener (an HTTPS proxy).
private struct HTTPSProxySetup {
    let directory: URL
    let pki: TestPKI

    init() throws {
        directory = try temporaryDirectory()
        pki = try TestPKI(commonName: "Proxy CA", host: "127.0.0.1")
        try pki.server.certificate.pemString.write(
            to: directory.appendingPathComponent("srv.pem"),
            atomically: true,
            encoding: .utf8
        )
        try pki.server.privateKey.write(toPEMFile: path("srv.key"), overwrite: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ more: String) throws -> String {
        let file = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            tls: { certificate: srv.pem, key: srv.key }
        admin: { address: "127.0.0.1:0" }
        cache:
          path: "\(path("cache"))"
        log:
          access: "\(path("access.log"))"
          format: json
        \(more)
        """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    var accessLog: String { (try? String(contentsOfFile: path("access.log"), encoding: .utf8)) ?? "" }
}

/// An HTTPS proxy (`tollgate serve`, a TLS forward listener) offers h2, and a client that takes it
/// tunnels and is intercepted on streams.
@Suite(
    "CONNECT on the streams of an HTTPS proxy's HTTP/2 (tollgate serve, Python h2 and ssl)",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil && HTTP2Peers.hasPythonH2)
)
struct HTTPSProxyHTTP2TunnelTests {
    @Test("ALPN h2, then a TLS handshake with the origin inside a CONNECT stream and a GET inside it")
    func tlsOriginThroughAStream() async throws {
        let setup = try HTTPSProxySetup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let originPKI = try TestPKI(commonName: "Origin CA", host: "127.0.0.1")
        let secure = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "secure \(request.target)")
        }
        defer { secure.stop() }
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let configuration = try setup.write("access:\n  connect-ports: [\(secure.port), \(echo.port)]")
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let steps: [[String: Any]] = [["connect": "127.0.0.1:\(echo.port)", "send": ["over tls "]]]
        let echoed = try await runClient(HTTP2Peers.connectTunnels, ["\(port)", setup.pki.caFile, try plan(steps)])
        #expect(echoed == ["alpn h2", "stream 1 status 200 ended data over tls bye"])
        let lines = try await runClient(
            HTTP2Peers.tlsInsideTunnel,
            ["\(port)", setup.pki.caFile, "127.0.0.1:\(secure.port)", "127.0.0.1", originPKI.caFile, "/b"]
        )
        #expect(lines.contains("connect status 200"), "\(lines)")
        #expect(lines.contains("inner status HTTP/1.1 200 OK"), "\(lines)")
        #expect(lines.contains("inner body secure /b"), "\(lines)")
        #expect(secure.requests.first?.headerFields["Via"] == nil)  // a tunnel: the proxy did not see the request
        try await eventually("the tunnels in the access log") {
            setup.accessLog.split(separator: "\n").filter { $0.contains("\"CONNECT\"") }.count == 2
        }
        let connect = try #require(setup.accessLog.split(separator: "\n").first { $0.contains("\(secure.port)") })
        #expect(connect.contains("\"version\":\"HTTP/2.0\""), "\(connect)")
        #expect(connect.contains("\"status\":200"), "\(connect)")
    }

    @Test(
        "An intercepted CONNECT on a stream: TLS under the minted leaf inside it, a GET over HTTP/1.1 answered by the origin and logged, then one over nested HTTP/2 from the cache"
    )
    func interceptionOnAStream() async throws {
        let setup = try HTTPSProxySetup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let binary = try #require(tollgateBinary)
        let caDirectory = setup.path("interception-ca")
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        let originPKI = try TestPKI(commonName: "Origin CA", host: "localhost")
        let origin = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "intercepted \(request.target)")
        }
        defer { origin.stop() }
        let configuration = try setup.write(
            """
            access:
              connect-ports: [\(origin.port)]
            hosts:
              - match: "localhost"
                intercept: true
                trust: { roots: ["\(originPKI.caFile)"] }
            interception:
              ca-dir: "\(caDirectory)"
            """
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let lines = try await runClient(
            HTTP2Peers.tlsInsideTunnel,
            [
                "\(try served.port("forward"))", setup.pki.caFile, "localhost:\(origin.port)", "localhost",
                caDirectory + "/ca.pem", "/doc",
            ]
        )
        #expect(lines.contains("connect status 200"), "\(lines)")
        #expect(lines.contains("inner status HTTP/1.1 200 OK"), "\(lines)")
        #expect(lines.contains("inner body intercepted /doc"), "\(lines)")
        // The proxy saw the request: it went upstream with its Via.
        #expect(origin.requests.first?.headerFields["Via"] == "1.1 tollgate")
        try await eventually("the request inside in the access log") {
            setup.accessLog.contains("https://localhost:\(origin.port)/doc")
        }
        // Offering h2 inside: a nested HTTP/2 front in the stream serves the second GET, from the cache.
        let nested = try await runClient(
            HTTP2Peers.tlsInsideTunnel,
            [
                "\(try served.port("forward"))", setup.pki.caFile, "localhost:\(origin.port)", "localhost",
                caDirectory + "/ca.pem", "/doc", "h2",
            ]
        )
        #expect(nested.contains { $0.hasPrefix("inner tls") && $0.hasSuffix("alpn h2") }, "\(nested)")
        #expect(nested.contains("inner status HTTP/2 200"), "\(nested)")
        #expect(nested.contains("inner body intercepted /doc"), "\(nested)")
        #expect(origin.requestCount == 1)
    }

    @Test(
        "Headless Chromium with an https:// proxy takes h2 from it and fetches an https page through a CONNECT on a stream",
        .enabled(if: chromiumBinary != nil, "chromium is not installed")
    )
    func chromiumTunnelsOverHTTP2() async throws {
        let setup = try HTTPSProxySetup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let chromium = try #require(chromiumBinary)
        let originPKI = try TestPKI(commonName: "Origin CA", host: "127.0.0.1")
        let origin = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(
                status: 200,
                headers: ["Content-Type": "text/html"],
                body: "<p id=m>through the stream \(request.target)</p>"
            )
        }
        defer { origin.stop() }
        // Only the origin's port may be tunnelled to; the browser's own background requests
        // (updates, time) are refused by the proxy, which never reaches beyond 127.0.0.1 for them.
        let configuration = try setup.write(
            """
            access:
              connect-ports: [\(origin.port)]
              destinations:
                - { allow: "127.0.0.1" }
            """
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let result = try await ChildProcess.run(
            chromium,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=\(setup.path("chromium-profile"))",
                // The test CAs are not in the browser's store (the proxy's and the origin's).
                "--ignore-certificate-errors",
                "--proxy-server=https://127.0.0.1:\(try served.port("forward"))",
                // Chromium sends loopback destinations direct unless told otherwise.
                "--proxy-bypass-list=<-loopback>",
                "--dump-dom", "https://127.0.0.1:\(origin.port)/page",
            ]
        )
        #expect(result.stdout.contains("through the stream /page"), "\(result.stdout) \(result.stderr.suffix(2000))")
        try await eventually(timeout: .seconds(10), "the browser's CONNECT in the access log") {
            setup.accessLog.contains("\"target\":\"127.0.0.1:\(origin.port)\"")
        }
        let connect = try #require(
            setup.accessLog.split(separator: "\n").first { $0.contains("\"target\":\"127.0.0.1:\(origin.port)\"") }
        )
        #expect(connect.contains("\"method\":\"CONNECT\""), "\(connect)")
        #expect(connect.contains("\"version\":\"HTTP/2.0\""), "\(connect)")
        #expect(connect.contains("\"status\":200"), "\(connect)")
    }
}
