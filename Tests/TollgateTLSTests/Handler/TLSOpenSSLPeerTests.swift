import Foundation
import NIOCore
import Testing
import TollgateTLS

/// Our handler against the `openssl` command line tools: an independent TLS implementation on the other end.
@Suite("TLSHandler against openssl s_server and s_client", .timeLimit(.minutes(2)))
struct TLSOpenSSLPeerTests {
    /// Starts `openssl s_server` with a leaf for `localhost` from `pki`.
    private func startServer(_ pki: TestPKI, _ arguments: [String]) async throws -> (OpenSSLProcess, port: Int) {
        let files = try pki.write(try pki.ca.issueLeaf(for: "localhost"), as: "server-\(UUID().uuidString)")
        return try await OpenSSLProcess.server(
            ["-cert", files.certificate, "-key", files.key] + arguments,
            in: pki.directory
        )
    }

    @Test("an HTTP request through our client to s_server -www gets its status page over TLS 1.3 with ALPN")
    func clientAgainstSServer() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (server, port) = try await self.startServer(pki, ["-www", "-alpn", "http/1.1"])
        defer { server.stop() }
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await client.send("GET / HTTP/1.0\r\n\r\n")
        try await waitUntil("s_server answers and closes") { log.isInactive }

        #expect(log.receivedText.hasPrefix("HTTP/1.0 200 ok"))
        #expect(log.receivedText.hasSuffix("</BODY></HTML>\r\n\r\n"))
        let evaluation = try #require(log.handshake?.evaluation)
        #expect(evaluation.trustResult == .trusted)
        #expect(evaluation.applicationProtocol == "http/1.1")
        #expect(evaluation.protocolVersion == .tlsv1_3)
        // s_server ends the page with close_notify: a clean shutdown, no error.
        #expect(log.tlsErrors.isEmpty)
    }

    @Test("s_client verifies our server, exchanges data and sees our close_notify")
    func sClientAgainstOurServer() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext { $0.applicationProtocols = ["http/1.1"] },
            behaviour: .init(closeAfterFirstReply: true)
        )
        let client = try OpenSSLProcess(
            [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
                "-CAfile", pki.caFile.path, "-verify_return_error", "-verify_hostname", "localhost",
                "-alpn", "http/1.1", "-ign_eof",
            ],
            in: pki.directory
        )
        defer { client.stop() }
        try await waitUntil("the handshake completes") { server.log.handshake != nil }
        client.send("ping from s_client\n")
        try await client.waitForExit()

        let output = client.output
        #expect(output.contains("Verify return code: 0 (ok)"))
        #expect(output.contains("ALPN protocol: http/1.1"))
        #expect(output.contains("ping from s_client"))
        // s_client prints "closed" when the server's close_notify arrives (SSL_ERROR_ZERO_RETURN).
        #expect(output.hasSuffix("closed\n"))
        #expect(server.log.receivedText == "ping from s_client\n")
        #expect(server.log.handshake?.evaluation.serverName == "localhost")
        await server.stop()
    }

    /// How `openssl s_client` (TLS `version`) connects to our server twice, the second time with the
    /// session the first saved: `New, …` or `Reused, …` each.
    /// What s_client says of two connections, the second offering the session the first saved:
    /// the first to `port`, the second to `resumingAt` (by default the same port).
    private func resumption(port: Int, resumingAt: Int? = nil, pki: TestPKI, version: String) async throws -> [String] {
        let session = pki.directory.appendingPathComponent("session-\(UUID().uuidString).pem").path
        var results: [String] = []
        for (store, port) in [("-sess_out", port), ("-sess_in", resumingAt ?? port)] {
            results.append(try await sessionLine(port: port, pki: pki, version: version, store, session))
        }
        return results
    }

    /// What s_client (TLS `version`) says of one connection to `port` that saves its session to
    /// `session` (`store` `-sess_out`) or offers the one saved there (`-sess_in`): `New, …` or
    /// `Reused, …`.
    private func sessionLine(port: Int, pki: TestPKI, version: String, _ store: String, _ session: String) async throws -> String {
        let client = try OpenSSLProcess(
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-CAfile", pki.caFile.path,
                "-verify_return_error", "-\(version)", store, session, "-ign_eof",
            ],
            in: pki.directory
        )
        defer { client.stop() }
        client.send("ping\n")
        try await client.waitForExit()
        return client.output.split(separator: "\n").first { $0.hasPrefix("New,") || $0.hasPrefix("Reused,") }.map(String.init) ?? ""
    }

    @Test("a server that issues session tickets lets s_client resume (TLS 1.3 and 1.2); by default, and when it asks for client certificates, every connection is a full handshake")
    func sessionTickets() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let issuing = try await LoopbackTLSServer.start(
            context: try pki.serverContext { $0.issuesSessionTickets = true },
            behaviour: .init(closeAfterFirstReply: true)
        )
        for version in ["tls1_3", "tls1_2"] {
            let outcome = try await resumption(port: issuing.port, pki: pki, version: version)
            #expect(outcome[0].hasPrefix("New,") && outcome[1].hasPrefix("Reused,"), "\(version): \(outcome)")
        }
        await issuing.stop()
        let plain = try await LoopbackTLSServer.start(context: try pki.serverContext(), behaviour: .init(closeAfterFirstReply: true))
        let fullEachTime = try await resumption(port: plain.port, pki: pki, version: "tls1_3")
        // No ticket to save: the second s_client has no session to offer, or one the server declines.
        #expect(fullEachTime[0].hasPrefix("New,") && !fullEachTime[1].hasPrefix("Reused,"), "\(fullEachTime)")
        await plain.stop()
        let askingForCertificates = try await LoopbackTLSServer.start(
            context: try pki.serverContext {
                $0.issuesSessionTickets = true
                $0.clientCertificateRequirement = .requested
                $0.trustRoots = .certificates([pki.ca.certificate])
            },
            behaviour: .init(closeAfterFirstReply: true)
        )
        let checkedEachTime = try await resumption(port: askingForCertificates.port, pki: pki, version: "tls1_3")
        // No ticket to save: the second s_client has no session to offer, or one the server declines.
        #expect(checkedEachTime[0].hasPrefix("New,") && !checkedEachTime[1].hasPrefix("Reused,"), "\(checkedEachTime)")
        await askingForCertificates.stop()
    }

    @Test("servers given the same ticket keys resume each other's sessions (TLS 1.3 and 1.2, AES-256 and AES-128 keys); a ticket under a later key resumes; one under a key the server does not have is a full handshake")
    func sharedTicketKeys() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let wide = try SessionTicketKey(bytes: (0..<80).map { _ in UInt8.random(in: 0...255) })
        let narrow = try SessionTicketKey(bytes: (0..<48).map { _ in UInt8.random(in: 0...255) })
        let other = try SessionTicketKey(bytes: (0..<80).map { _ in UInt8.random(in: 0...255) })
        func server(_ keys: [SessionTicketKey]) async throws -> LoopbackTLSServer {
            try await LoopbackTLSServer.start(
                context: try pki.serverContext {
                    $0.issuesSessionTickets = true
                    $0.sessionTicketKeys = keys
                },
                behaviour: .init(closeAfterFirstReply: true)
            )
        }
        let first = try await server([wide])
        let second = try await server([wide])
        let narrowFirst = try await server([narrow])
        let narrowSecond = try await server([narrow])
        let rotated = try await server([other, wide])
        let stranger = try await server([other])
        for version in ["tls1_3", "tls1_2"] {
            let across = try await resumption(port: first.port, resumingAt: second.port, pki: pki, version: version)
            #expect(across[0].hasPrefix("New,") && across[1].hasPrefix("Reused,"), "\(version), AES-256: \(across)")
            let narrowAcross = try await resumption(port: narrowFirst.port, resumingAt: narrowSecond.port, pki: pki, version: version)
            #expect(narrowAcross[0].hasPrefix("New,") && narrowAcross[1].hasPrefix("Reused,"), "\(version), AES-128: \(narrowAcross)")
            let afterRotation = try await resumption(port: first.port, resumingAt: rotated.port, pki: pki, version: version)
            #expect(afterRotation[1].hasPrefix("Reused,"), "\(version), the old key second: \(afterRotation)")
            let unknown = try await resumption(port: first.port, resumingAt: stranger.port, pki: pki, version: version)
            #expect(unknown[0].hasPrefix("New,") && unknown[1].hasPrefix("New,"), "\(version), another key: \(unknown)")
        }
        for running in [first, second, narrowFirst, narrowSecond, rotated, stranger] { await running.stop() }
        #expect(throws: SessionTicketKey.FormatError.self) { try SessionTicketKey(bytes: Array(repeating: 1, count: 32)) }
        #expect("\(wide)" == "session ticket key " + wide.name.map { String(format: "%02x", $0) }.joined(), "named, its secrets never shown")
    }

    @Test("a server's own ticket keys rotate: a ticket from the last period resumes (and is replaced); one past three periods is a full handshake")
    func ownTicketKeysRotate() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext {
                $0.issuesSessionTickets = true
                $0.sessionTicketKeyRotation = .seconds(1)
            },
            behaviour: .init(closeAfterFirstReply: true)
        )
        defer { Task { await server.stop() } }
        for version in ["tls1_3", "tls1_2"] {
            // Saved, then offered 1.5 periods later: sealed under the key before the current one.
            let session = pki.directory.appendingPathComponent("rotating-\(version).pem").path
            func connect(_ store: String) async throws -> String {
                try await sessionLine(port: server.port, pki: pki, version: version, store, session)
            }
            #expect(try await connect("-sess_out").hasPrefix("New,"), "\(version)")
            try await Task.sleep(for: .milliseconds(1_500))
            #expect(try await connect("-sess_in").hasPrefix("Reused,"), "\(version): a ticket of the last period resumes")
            try await Task.sleep(for: .milliseconds(3_200))
            #expect(try await connect("-sess_in").hasPrefix("New,"), "\(version): its key is gone three periods after it was made")
        }
    }

    @Test("a peer that vanishes without close_notify is reported as an unclean shutdown")
    func uncleanShutdown() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (server, port) = try await self.startServer(pki, ["-rev"])
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await client.send("olleh\n")
        try await waitUntil("s_server answers") { log.receivedText.contains("hello") }
        server.stop()
        try await waitUntil("the client sees the EOF") { log.isInactive }
        #expect(log.tlsErrors == [.uncleanShutdown])
    }

    @Test("closing our client sends close_notify: the server sees a clean shutdown")
    func closeSendsCloseNotify() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // Our server, told to report unclean shutdowns, stands in for the peer.
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext { $0.reportsUncleanShutdown = true }
        )
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await client.send("bye")
        try await waitUntil("the echo arrives") { log.receivedText == "bye" }
        try await client.close()
        try await waitUntil("the server sees the end") { server.log.isInactive }
        #expect(server.log.tlsErrors.isEmpty)
        #expect(server.log.otherErrors.isEmpty)
        #expect(log.tlsErrors.isEmpty)
        await server.stop()
    }

    @Test("a client capped at TLS 1.2 cannot talk to a TLS 1.3-only s_server, and can when not capped")
    func maximumVersion() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (server, port) = try await self.startServer(pki, ["-tls1_3", "-www"])
        defer { server.stop() }

        let capped = ConnectionLog()
        _ = try await connectTLSClient(
            port: port,
            context: try pki.clientContext { $0.maximumVersion = .tlsv1_2 },
            serverHostname: "localhost",
            log: capped
        )
        try await waitUntil("the capped client gives up") { capped.isInactive }
        #expect(capped.handshakes.isEmpty)
        let error = try #require(capped.tlsErrors.first)
        #expect(error == .alertReceived)
        #expect(error.alert == "protocol version")

        let open = ConnectionLog()
        let client = try await connectTLSClient(
            port: port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: open
        )
        try await waitUntil("the handshake completes") { open.handshake != nil }
        #expect(open.handshake?.evaluation.protocolVersion == .tlsv1_3)
        try await client.close()
    }

    @Test("a client requiring TLS 1.3 refuses a TLS 1.2-only s_server, and the default client accepts it")
    func minimumVersion() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (server, port) = try await self.startServer(pki, ["-tls1_2", "-www"])
        defer { server.stop() }

        let strict = ConnectionLog()
        _ = try await connectTLSClient(
            port: port,
            context: try pki.clientContext { $0.minimumVersion = .tlsv1_3 },
            serverHostname: "localhost",
            log: strict
        )
        try await waitUntil("the strict client gives up") { strict.isInactive }
        #expect(strict.handshakes.isEmpty)
        #expect(strict.tlsErrors.first == .handshakeFailed || strict.tlsErrors.first == .alertReceived)

        let open = ConnectionLog()
        let client = try await connectTLSClient(
            port: port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: open
        )
        try await waitUntil("the handshake completes") { open.handshake != nil }
        #expect(open.handshake?.evaluation.protocolVersion == .tlsv1_2)
        try await client.close()
    }

    @Test("the default TLS 1.2 minimum refuses a TLS 1.1-only peer")
    func tls11Refused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // TLS 1.1 needs security level 0 in OpenSSL 3; s_server allows it when told to.
        let (server, port) = try await self.startServer(pki, ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-www"])
        defer { server.stop() }
        let log = ConnectionLog()
        _ = try await connectTLSClient(
            port: port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await waitUntil("the client gives up") { log.isInactive }
        #expect(log.handshakes.isEmpty)
        #expect(log.tlsErrors.first == .alertReceived || log.tlsErrors.first == .handshakeFailed)
    }
}
