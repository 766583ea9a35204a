import Testing
import TollgateHTTP
import TollgateTesting

@Suite("Connections to one origin", .timeLimit(.minutes(1)))
struct ConnectionsPerOriginTests {
    @Test("Twelve clients downloading from one origin at once each get a connection by default (not six)")
    func noHeadOfLineBlocking() async throws {
        // Each response sends its head and one byte, then stays open: a long download.
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "1000"])
            respond.write("x")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            var clients: [RawClient] = []
            defer { clients.forEach { $0.close() } }
            for index in 0..<12 {
                let client = try await RawClient.connect(port: proxy.port)
                clients.append(client)
                try await client.send("GET http://127.0.0.1:\(origin.port)/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            // With URLSession's limit of 6 the last six would wait for the first downloads to end
            // (and get 504 after limits.upstream-timeout).
            try await eventually("all twelve requests reach the origin", timeout: .seconds(5)) {
                origin.requestCount == 12
            }
            #expect(origin.connectionCount == 12)
        }
    }
}
