import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// `listen[].throttle`: a slower network between a listener and its clients, measured by curl.
/// Only lower bounds on time (a loaded machine is slower, never faster), and the same transfer on
/// an unthrottled listener of the same process to show the throttle is what slows it.
@Suite(
    "listen[].throttle: download, upload and latency as curl sees them (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && executableOnPath("curl") != nil)
)
struct ThrottledListenerTests {
    @Test("A download is paced at the rate, an upload read at its rate, and every answer starts a latency later")
    func throttles() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = [UInt8](repeating: 0x62, count: 256 << 10)
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.method == "POST" {
                respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "got \(request.body.count)")
            } else if request.target == "/big" || request.target == "/big-again" {
                respond.send(status: 200, headers: ["Cache-Control": "no-store"], bytes: big)
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "small")
            }
        }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            throttle: { download: 128KiB/s, upload: 512kbit/s }
          - address: "127.0.0.1:0"
            throttle: { latency: 300ms }
          - address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 3)
        defer { served.child.kill() }
        #expect(served.listeners.count == 3)
        let (rated, delayed, plain) = (served.listeners[0].port, served.listeners[1].port, served.listeners[2].port)
        let upload = directory.appendingPathComponent("upload.bin")
        try Data(repeating: 0x75, count: 128 << 10).write(to: upload)

        /// curl through the listener on `port`: `-w` values as numbers.
        func curl(_ port: Int, _ path: String, _ extra: [String] = [], write: String) async throws -> (status: String, numbers: [Double]) {
            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "-o", "/dev/null", "-x", "http://127.0.0.1:\(port)", "-w", "%{http_code} " + write] + extra + ["http://127.0.0.1:\(origin.port)\(path)"]
            )
            let fields = result.stdout.split(separator: " ")
            return (fields.first.map(String.init) ?? "", fields.dropFirst().compactMap { Double($0) })
        }

        // 256 KiB at 128 KiB/s: two seconds (the first window goes out at once: allow a quarter).
        let download = try await curl(rated, "/big", write: "%{time_total} %{size_download}")
        #expect(download.status == "200")
        #expect(download.numbers.count == 2 && download.numbers[1] == Double(256 << 10), "\(download)")
        #expect(download.numbers.first.map { $0 >= 1.5 } == true, "256 KiB at 128 KiB/s took \(download.numbers) s")
        let unthrottled = try await curl(plain, "/big-again", write: "%{time_total}")
        #expect(unthrottled.numbers.first.map { $0 < 1.0 } == true, "the same download unthrottled took \(unthrottled.numbers) s")

        // 128 KiB up at 512 kbit/s (64 KiB/s): the origin has it all after two seconds.
        let sent = try await curl(rated, "/up", ["--data-binary", "@\(upload.path)", "-H", "Content-Type: application/octet-stream"], write: "%{time_total}")
        #expect(sent.status == "200")
        #expect(sent.numbers.first.map { $0 >= 1.6 } == true, "128 KiB at 64 KiB/s took \(sent.numbers) s")
        #expect(origin.requestCount == 3)

        // 300 ms more before the first byte of an answer, on each request of the connection.
        let first = try await curl(delayed, "/small", write: "%{time_starttransfer} %{time_connect}")
        #expect(first.status == "200")
        #expect(first.numbers.count == 2 && first.numbers[0] - first.numbers[1] >= 0.3, "\(first.numbers)")
    }

    @Test("On a TLS listener the handshake and the request each wait the latency, and HTTP/2's frames are paced at the rate")
    func throttlesTLS() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = [UInt8](repeating: 0x62, count: 256 << 10)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], bytes: big)
        }
        defer { origin.stop() }
        let pki = try TestPKI(host: "127.0.0.1")
        let files = try pki.writeServerFiles(in: directory)
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: "\(files.certificate)", key: "\(files.key)" }
            throttle: { download: 256KiB/s, latency: 200ms }
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        log: { access: off }
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let result = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "--http2", "--cacert", pki.caFile, "-w",
             "%{http_code} %{http_version} %{size_download} %{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}",
             "https://127.0.0.1:\(try served.port("reverse"))/big"]
        )
        let fields = result.stdout.split(separator: " ").map(String.init)
        #expect(fields.prefix(3) == ["200", "2", String(256 << 10)], "\(result.stdout) \(result.stderr)")
        let times = fields.dropFirst(3).compactMap(Double.init)
        try #require(times.count == 4, "\(result.stdout)")
        let (connected, handshaken, firstByte, total) = (times[0], times[1], times[2], times[3])
        #expect(handshaken - connected >= 0.2, "the ClientHello waited the latency: \(times)")
        #expect(firstByte - handshaken >= 0.2, "the request waited the latency: \(times)")
        #expect(total - firstByte >= 0.7, "256 KiB at 256 KiB/s: \(times)")
    }
}
