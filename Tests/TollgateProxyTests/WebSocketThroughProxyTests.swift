import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS
import TollgateTesting

@Suite(
    "WebSocket connections through tollgate as a proxy (interception, upstream proxy)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: WebSocketPeer.python != nil && tollgateBinary != nil, "needs python3 with websockets, and the tollgate binary")
)
struct WebSocketThroughProxyTests {
    @Test("wss through an intercepting proxy: the client trusts the local CA, frames are relayed and logged")
    func interceptedSecureWebSocket() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caDirectory = directory.appendingPathComponent("ca").path
        let created = try await ChildProcess.run(try #require(tollgateBinary), ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        // The origin: Python's websockets server over TLS with a leaf for localhost.
        let pki = try TestPKI(commonName: "Origin CA", host: "localhost")
        let files = try pki.writeServerFiles(in: directory)
        let server = try await WebSocketPeer.startServer(certificate: files.certificate, key: files.key)
        defer { server.stop() }
        let accessLog = directory.appendingPathComponent("access.log").path
        let configuration = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
            access:
              connect-ports: [\(server.port)]
            hosts:
              - match: "localhost"
                intercept: true
                trust:
                  roots: ["\(pki.caFile)"]
            interception:
              ca-dir: "\(caDirectory)"
            limits:
              websocket-max-message: 1000
            log:
              access: "\(accessLog)"
              format: json
            """.write(to: configuration, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", configuration.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let run = try await WebSocketPeer.runClient(
            uri: "wss://localhost:\(server.port)/echo", messages: ["secret", "bytes:2000"],
            proxy: "http://127.0.0.1:\(try served.port("forward"))", caFile: caDirectory + "/ca.pem"
        )
        #expect(run.stdout == "reply secret\nclosed 1009 \n", "\(run.stderr)")
        try await eventually("the server saw the proxy's 1009") { server.closes == ["closed 1009 "] }
        try await eventually("the upgrade's access log line") {
            (try? String(contentsOfFile: accessLog, encoding: .utf8))?.contains("\"websocket\":{") == true
        }
        let lines = try String(contentsOfFile: accessLog, encoding: .utf8).split(separator: "\n")
        let upgrade = try #require(lines.first { $0.contains("\"websocket\":{") })
        #expect(upgrade.contains(#""messages_to_upstream":1,"bytes_to_upstream":6,"messages_to_client":1,"bytes_to_client":6,"close_code":1009,"closed_by":"proxy""#), "\(upgrade)")
        #expect(upgrade.contains(#""target":"https://localhost:\#(server.port)/echo""#), "\(upgrade)")
    }

    @Test("A session's WebSocket task reaches a ws origin through its upstream proxy by a CONNECT tunnel")
    func sessionThroughUpstreamProxy() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        var policy = PolicyConfiguration()
        policy.access.connectPorts = [server.port]
        try await withProxy(configuration: policy) { proxy in
            var configuration = SessionConfiguration.ephemeral
            configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: proxy.port)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let task = try session.webSocketTask(with: HTTPURL(string: "ws://127.0.0.1:\(server.port)/echo")!)
            task.resume()
            try await task.send(.string("through the tunnel"))
            #expect(try await task.receive() == .string("through the tunnel"))
            task.cancel(with: .normalClosure, reason: nil)
            try await eventually("the tunnel's log line") { !proxy.accessLog.isEmpty }
            #expect(proxy.accessLog.first?.contains("\"CONNECT 127.0.0.1:\(server.port) HTTP/1.1\" 200") == true, "\(proxy.accessLog)")
        }
    }
}
