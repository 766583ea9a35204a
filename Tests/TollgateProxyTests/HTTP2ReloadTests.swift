import Foundation
import Testing
import TollgatePolicy
import TollgateProxy
import TollgateTesting

/// A reload retires the HTTP/2 connections made under the old rules: the next stream on such a
/// connection is still served, and the connection is told to go away (GOAWAY), so the client's
/// next connection is made under the new rules.
@Suite("HTTP/2 connections after a reload", .timeLimit(.minutes(1)), .enabled(if: HTTP2Peers.hasPythonH2))
struct HTTP2ReloadTests {
    /// `PORT SIGNAL_FILE`: GET /a on stream 1 and prints `answer 1`; waits (at most 20 s) for
    /// SIGNAL_FILE to exist, then GET /b on stream 3 on the same connection and prints `answer 3`
    /// and `goaway` if a GOAWAY came, until the stream ends and the server closes (or 10 s).
    static let twoStreamsAcrossASignal = #"""
        import os, socket, struct, sys, time
        import h2.connection, h2.config
        port, signal = int(sys.argv[1]), sys.argv[2]
        s = socket.create_connection(("127.0.0.1", port))
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        s.sendall(c.data_to_send())
        buffered = b""
        def get(stream, path):
            c.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":authority", "gw"), (":path", path)], end_stream=True)
            s.sendall(c.data_to_send())
        # The frames are read here by hand: python-h2 refuses every frame after a GOAWAY, even
        # those of the streams the GOAWAY lets finish (RFC 9113 §6.8). h2 still answers SETTINGS
        # and PING while it takes frames.
        def pump(until, seconds):
            global buffered
            end = time.time() + seconds
            while time.time() < end:
                s.settimeout(0.2)
                try:
                    data = s.recv(1 << 16)
                except socket.timeout:
                    continue
                if not data:
                    print("closed", flush=True)
                    return
                try:
                    c.receive_data(data)
                    s.sendall(c.data_to_send())
                except Exception:
                    pass
                buffered += data
                while len(buffered) >= 9:
                    length = int.from_bytes(buffered[0:3], "big")
                    if len(buffered) < 9 + length:
                        break
                    kind, flags = buffered[3], buffered[4]
                    stream = struct.unpack(">I", buffered[5:9])[0] & 0x7FFFFFFF
                    payload = buffered[9:9 + length]
                    buffered = buffered[9 + length:]
                    if kind in (0, 1) and flags & 1:
                        print("answer", stream, flush=True)
                        if stream == until:
                            return
                    elif kind == 7:
                        print("goaway", struct.unpack(">I", payload[4:8])[0], flush=True)
        get(1, "/a")
        pump(1, 10)
        end = time.time() + 20
        while not os.path.exists(signal) and time.time() < end:
            time.sleep(0.05)
        get(3, "/b")
        pump(3, 10)
        # What follows the answer: the GOAWAY after a reload (and the close), nothing otherwise.
        pump(0, 2)
        """#

    @Test("After a reload the next stream is served, then GOAWAY; without a reload the connection stays")
    func reloadDrainsTheConnection() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "ok \(request.target)")
        }
        defer { origin.stop() }
        let runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil, prepareSession: { _, _, _ in })
        defer { runtime.shutdown() }
        var configuration = ProxyServer.Configuration(
            listen: ListenAddress(host: "127.0.0.1", port: 0),
            mode: .reverse(upstream: origin.url())
        )
        configuration.h2c = true
        let server = try await ProxyServer.start(configuration, policy: runtime)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        for reload in [false, true] {
            let signal = directory.appendingPathComponent("go-\(reload)").path
            let client = try HTTP2Peers.runPython(Self.twoStreamsAcrossASignal, ["\(server.boundAddress.port)", signal])
            defer { client.kill() }
            try await eventually("stream 1 answered") { client.standardOutput.contains("answer 1") }
            if reload { runtime.apply(PolicyConfiguration()) }
            _ = FileManager.default.createFile(atPath: signal, contents: nil)
            _ = try await client.waitForExit(timeout: .seconds(30))
            let lines = client.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.contains("answer 3"), "reload \(reload): \(lines) \(client.standardError)")
            // GOAWAY NO_ERROR (0) after a reload; none while the rules stay.
            #expect(lines.contains("goaway 0") == reload, "reload \(reload): \(lines)")
        }
        #expect(origin.requestCount == 4)
        await server.shutdown(gracePeriod: .seconds(1))
    }
}
