import Foundation
import Testing
import TollgateHTTP
import TollgateTLS
import TollgateTesting

/// Debian's chromium, when installed (`make deps`).
let chromiumBinary: String? = executableOnPath("chromium")

@Suite(
    "The live view in a real headless browser",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct LiveViewTests {
    @Test("GET / is one self-contained page: nothing is loaded from anywhere but the admin listener")
    func pageIsSelfContained() async throws {
        let setup = try await ExchangeRecordTests.Setup.start()
        defer { setup.stop() }
        let page = try await request("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: setup.admin)
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.bodyText.contains("<script>") && page.bodyText.contains("<style>"))
        for external in ["http://", "https://", "src=", "href=", "@import", "//cdn"] {
            #expect(!page.bodyText.contains(external), "the page refers to \(external)")
        }
    }

    @Test("A GET from the admin listener's own page may carry its Origin; any other Origin, and any POST with one, is refused")
    func sameOriginGetIsAllowed() async throws {
        let setup = try await ExchangeRecordTests.Setup.start()
        defer { setup.stop() }
        let host = "127.0.0.1:\(setup.admin)"
        let own = try await request(
            "GET /cache/stats HTTP/1.1\r\nHost: \(host)\r\nOrigin: http://\(host)\r\n\r\n", port: setup.admin
        )
        #expect(own.status == 200)
        let other = try await request(
            "GET /cache/stats HTTP/1.1\r\nHost: \(host)\r\nOrigin: http://evil.example\r\n\r\n", port: setup.admin
        )
        #expect(other.status == 403)
        let post = try await request(
            "POST /config/reload HTTP/1.1\r\nHost: \(host)\r\nOrigin: http://\(host)\r\nContent-Length: 0\r\n\r\n",
            port: setup.admin
        )
        #expect(post.status == 403)
    }

    @Test(
        "Headless Chromium renders the live view with an exchange made through the proxy, its cache result and the cache's figures",
        .enabled(if: chromiumBinary != nil, "chromium is not installed")
    )
    func chromiumRendersTheExchange() async throws {
        let setup = try await ExchangeRecordTests.Setup.start()
        defer { setup.stop() }
        #expect(try await setup.get("/stored?from=the-live-view-test").status == 200)
        let dom = try await renderedLiveView(admin: setup.admin, in: setup.directory)
        #expect(dom.contains("http://127.0.0.1:\(setup.origin.port)/stored?from=the-live-view-test"), "\(dom)")
        #expect(dom.contains("badge miss"), "the exchange's cache result")
        #expect(dom.contains("<small>entries</small>"), "the cache's figures")
        #expect(!dom.contains("/har?limit=100: 403"), "the page's own reads were refused")
        #expect(!dom.contains("loading…"), "the page never refreshed")
        #expect(dom.contains("<section id=\"offline\" hidden=\"\">"), "an online proxy shows no offline misses")
    }

    @Test(
        "Offline, the live view says so and lists what the proxy could not serve",
        .enabled(if: chromiumBinary != nil, "chromium is not installed")
    )
    func chromiumShowsOfflineMisses() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        warmed.stopOrigin()
        let served = try await warmed.serve(["--offline"])
        defer { served.child.kill() }
        let admin = try served.port("admin")
        let miss = try await request("GET \(warmed.base)/not-warmed-for-the-view HTTP/1.1\r\nHost: x\r\n\r\n", port: try served.port("forward"))
        #expect(miss.status == 504)
        let stats = try await request("GET /cache/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin)
        #expect(stats.bodyText.contains("\"read_only\":false,\"offline\":true"), "\(stats.bodyText)")

        let dom = try await renderedLiveView(admin: admin, in: warmed.directory)
        #expect(dom.contains("<span class=\"mode\">offline</span>"), "\(dom)")
        #expect(dom.contains("<section id=\"offline\">"), "the misses section is shown")
        #expect(dom.contains("\(warmed.base)/not-warmed-for-the-view"), "\(dom)")
        #expect(dom.contains("not-cached"), "the miss's reason")
    }

    @Test(
        "The live view lists the connect-to backends and says which one is passed over",
        .enabled(if: chromiumBinary != nil, "chromium is not installed")
    )
    func chromiumShowsBackends() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "from the backend") }
        defer { origin.stop() }
        let refusing = ClosedPort().port
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                admin:
                  address: "127.0.0.1:0"
                hosts:
                  - match: backend.test
                    connect-to: ["127.0.0.1:\(refusing)", "127.0.0.1:\(origin.port)"]
                    connect-to-check: { interval: 200ms, request: GET /healthz, timeout: 2s }
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let answer = try await request(
            "GET http://backend.test/page HTTP/1.1\r\nHost: backend.test\r\n\r\n", port: try served.port("forward")
        )
        #expect(answer.bodyText == "from the backend")
        let admin = try served.port("admin")
        var listing = ""
        for _ in 0..<100 where listing.components(separatedBy: "\"last_check\"").count < 3 {
            listing = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(listing.components(separatedBy: "\"last_check\"").count == 3, "both targets were checked: \(listing)")
        let dom = try await renderedLiveView(admin: admin, in: directory)
        #expect(dom.contains("<section id=\"backends\">"), "the backends section is shown: \(dom)")
        #expect(dom.contains("127.0.0.1:\(refusing)</td><td class=\"down\" title=\"passed over\">passed over</td>"), "\(dom)")
        // Its failures are not asserted: under a loaded machine one 200 ms check may time out.
        let healthy = try #require(dom.range(of: "127.0.0.1:\(origin.port)</td><td title=\"in turn\">in turn</td>"), "\(dom)")
        #expect(dom[healthy.upperBound...].prefix(60).contains("<td title=\"ok\">ok</td>"), "its last check passed: \(dom)")
        #expect(dom.contains("Connection refused</td>") && dom.contains("<td class=\"down\" title=\"cannot connect to 127.0.0.1:\(refusing)"), "the failed check says why: \(dom)")
    }

    @Test(
        "The live view lists a TLS listener's certificate with the OCSP response it staples and its shared ticket key; GET /listeners says the same",
        .enabled(if: chromiumBinary != nil, "chromium is not installed")
    )
    func chromiumShowsListeners() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try TestPKI(commonName: "View CA", host: "127.0.0.1")
        let intermediate = try pki.authority.issueIntermediate(commonName: "View Intermediate")
        let leaf = try intermediate.issueLeaf(for: "127.0.0.1")
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        try leaf.certificateChain.map(\.pemString).joined().write(toFile: path("gw.pem"), atomically: true, encoding: .utf8)
        try leaf.privateKey.write(toPEMFile: path("gw.key"))
        try Data(try await TestOCSPResponder.response(by: intermediate, for: leaf)).write(to: URL(fileURLWithPath: path("gw.ocsp")))
        let keyBytes = (0..<80).map { _ in UInt8.random(in: 0...255) }
        #expect(FileManager.default.createFile(atPath: path("ticket.key"), contents: Data(keyBytes), attributes: [.posixPermissions: 0o600]))
        let keyName = keyBytes[0..<16].map { String(format: "%02x", $0) }.joined()
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                admin:
                  address: "127.0.0.1:0"
                """
        )
        // A second listener, TLS, beside the forward one.
        var text = try String(contentsOf: config, encoding: .utf8)
        text = text.replacingOccurrences(
            of: "listen:\n  - address: \"127.0.0.1:0\"\n",
            with: "listen:\n  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n    mode: reverse\n    upstream: \"http://127.0.0.1:9\"\n"
                + "    tls: { certificate: \(path("gw.pem")), key: \(path("gw.key")), ocsp-response: \(path("gw.ocsp")), session-ticket-keys: \(path("ticket.key")) }\n"
        )
        try text.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 3)
        defer { served.child.kill() }
        let admin = try served.port("admin")
        let listing = try await request("GET /listeners HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
        #expect(listing.contains("\"source\":\"file\",\"status\":\"good\""), "\(listing)")
        #expect(listing.contains("\"session_tickets\":\"shared\",\"ticket_keys\":[\"session ticket key \(keyName)\"]"), "\(listing)")
        #expect(!listing.contains(keyBytes[16..<48].map { String(format: "%02x", $0) }.joined()), "never a secret")
        let dom = try await renderedLiveView(admin: admin, in: directory)
        #expect(dom.contains("<section id=\"listeners\">"), "the listeners section is shown: \(dom)")
        #expect(dom.contains("CN=127.0.0.1"), "\(dom)")
        #expect(dom.contains("file: good until"), "\(dom)")
        #expect(dom.contains("shared (session ticket key \(keyName))"), "\(dom)")
    }

    /// The live view on the admin listener at `admin` as headless Chromium renders it after its
    /// first refreshes (`--dump-dom`, 5 s of virtual time), its profile in `directory`.
    private func renderedLiveView(admin: Int, in directory: URL) async throws -> String {
        let profile = directory.appendingPathComponent("chromium-profile")
        let browser = try ChildProcess(
            try #require(chromiumBinary),
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--user-data-dir=\(profile.path)", "--virtual-time-budget=5000", "--dump-dom", "http://127.0.0.1:\(admin)/",
            ],
            environment: ["HOME": directory.path]
        )
        defer { browser.kill() }
        #expect(try await browser.waitForExit(timeout: .seconds(40)) == 0, "\(browser.standardError)")
        return browser.standardOutput
    }
}
