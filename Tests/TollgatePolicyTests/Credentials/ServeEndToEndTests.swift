import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateHTTP
import TollgateTesting

/// `tollgate serve` run as a child process, its output collected.
private final class ServeProcess: Sendable {
    private let process: ChildProcess

    init(_ arguments: [String], environment extra: [String: String]) throws {
        guard let binary = CommandLineRunner.binary else { throw CommandLineRunner.RunnerError(message: CommandLineRunner.notFound) }
        process = try ChildProcess(binary, arguments, environment: extra)
    }

    /// What it printed: standard output, then standard error.
    var text: String { process.standardOutput + process.standardError }
    var isRunning: Bool { process.isRunning }

    /// The port of the `listening on 127.0.0.1:PORT (forward)` line.
    func listeningPort() async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            for line in text.split(separator: "\n") where line.hasPrefix("listening on 127.0.0.1:") {
                let address = line.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber }
                if let port = Int(address) { return port }
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CommandLineRunner.RunnerError(message: "serve did not start:\n\(text)")
    }

    func stop() async throws -> Int32 {
        process.terminate()
        do {
            return try await process.waitForExit(timeout: .seconds(20))
        } catch {
            process.kill()
            throw error
        }
    }
}

@Suite("tollgate serve: jar versus passthrough and rule credentials, client → proxy → origin", .timeLimit(.minutes(1)))
struct ServeEndToEndTests {
    static let curl = ["/usr/bin/curl", "/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// curl through the proxy: (status line's code, body).
    static func fetch(_ url: String, proxy: Int, headers: [String] = []) throws -> (Int, String) {
        guard let curl else { throw CommandLineRunner.RunnerError(message: "no curl") }
        let text = try ChildProcess.runBlocking(
            curl, ["-s", "--max-time", "10", "-x", "http://127.0.0.1:\(proxy)", "-w", "\n%{http_code}", url] + headers.flatMap { ["-H", $0] }
        ).stdout
        let newline = text.lastIndex(of: "\n") ?? text.endIndex
        return (Int(text[newline...].dropFirst()) ?? 0, String(text[..<newline]))
    }

    @Test(
        "jar adds and keeps cookies, passthrough leaves them alone, and the rule's password answers Basic for the client",
        .enabled(if: CommandLineRunner.binary != nil && Self.curl != nil, "needs the tollgate executable and curl")
    )
    func endToEnd() async throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/login":
                respond.send(status: 200, headers: ["Set-Cookie": "sid=abc; Path=/; Max-Age=3600"], body: "in")
            case "/private":
                if request.headerFields["Authorization"] == "Basic " + Data("alice:s3cret".utf8).base64EncodedString() {
                    respond.send(status: 200, body: "welcome")
                } else {
                    respond.send(status: 401, headers: ["WWW-Authenticate": #"Basic realm="Restricted""#], body: "denied")
                }
            default:
                respond.send(status: 200, body: "cookie: " + (request.headerFields["Cookie"] ?? "-"))
            }
        }
        defer { origin.stop() }
        let passwordFile = directory + "/alice.pass"
        try "s3cret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let config = directory + "/tollgate.yaml"
        try """
            listen:
              - { address: "127.0.0.1:0", mode: forward }
            cache:
              path: "\(directory)/cache"
            log:
              access: off
            sessions:
              default:
                cookies: passthrough
              jar:
                cookies: jar
                cookie-accept: always
            hosts:
              - match: "localhost:\(origin.port)"
                session: jar
                credentials:
                  - { realm: "Restricted", user: alice, password-file: "\(passwordFile)", persistence: permanent }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let data = directory + "/data"
        let environment = ["XDG_DATA_HOME": data, "XDG_CACHE_HOME": directory + "/xdg-cache"]
        let serve = try ServeProcess(["serve", "--config", config], environment: environment)
        var stopped = false
        defer { if !stopped { Task { _ = try? await serve.stop() } } }
        let proxy = try await serve.listeningPort()

        let jarURL = "http://localhost:\(origin.port)"
        #expect(try Self.fetch(jarURL + "/login", proxy: proxy).0 == 200)
        #expect(try Self.fetch(jarURL + "/page", proxy: proxy).1 == "cookie: sid=abc")
        // The client's own Cookie is left as it is, in both modes.
        #expect(try Self.fetch(jarURL + "/page", proxy: proxy, headers: ["Cookie: mine=1"]).1 == "cookie: mine=1")
        let plainURL = "http://127.0.0.1:\(origin.port)"
        #expect(try Self.fetch(plainURL + "/login", proxy: proxy).0 == 200)
        #expect(try Self.fetch(plainURL + "/page", proxy: proxy).1 == "cookie: -")
        #expect(try Self.fetch(plainURL + "/page", proxy: proxy, headers: ["Cookie: a=1"]).1 == "cookie: a=1")
        // The client sends no credentials; the proxy answers the challenge from the rule.
        let (status, body) = try Self.fetch(jarURL + "/private", proxy: proxy)
        #expect(status == 200)
        #expect(body == "welcome")
        // Without a rule's credentials the client gets the origin's 401.
        #expect(try Self.fetch(plainURL + "/private", proxy: proxy).0 == 401)

        #expect(try await serve.stop() == 0)
        stopped = true
        #expect(!serve.text.contains("s3cret"))
        // What the proxy kept, seen by the commands: the permanent credential and the jar's cookie.
        let credentials = try await CommandLineRunner.run(["credentials", "list"], environment: environment)
        #expect(credentials.stdout == "http://localhost:\(origin.port)  basic  realm=\"Restricted\"  alice  ****  default\n", "\(credentials)")
        let cookies = try await CommandLineRunner.run(["cookies", "list"], environment: environment)
        #expect(cookies.stdout.hasPrefix("localhost  /  sid=****  expires "), "\(cookies)")
        #expect(cookies.stdout.split(separator: "\n").count == 1)
    }
}
