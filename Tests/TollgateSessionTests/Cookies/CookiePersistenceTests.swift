import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

@Suite(
    "Cookies on disk for default sessions, in memory for ephemeral ones; the jar in a session",
    .timeLimit(.minutes(1))
)
struct CookiePersistenceTests {
    static func url(_ text: String) -> HTTPURL { HTTPURL(string: text)! }

    @Test("Persistent cookies survive a reopen; session cookies and expired ones do not; modes 0700/0600")
    func survivesReopen() throws {
        let directory = AuthFixture.temporaryDirectory() + "/cookies"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let origin = Self.url("https://example.com/app/")
        do {
            let storage = try CookieStorage.persistent(directory: directory)
            #expect(try CookieStorage.persistent(directory: directory) === storage)
            storage.store(
                setCookieValues: [
                    "keep=1; Max-Age=3600; Path=/; Secure; HttpOnly; SameSite=Lax", "session=2",
                    "brief=3; Max-Age=3600",
                    "replaced=old; Max-Age=3600", "replaced=new; Max-Age=7200",
                ],
                from: origin,
                policy: .always
            )
            storage.store(setCookieValues: ["brief=x; Max-Age=0"], from: origin, policy: .always)
            storage.close()
        }
        #expect(AuthFixture.mode(directory) == 0o700)
        #expect(AuthFixture.mode(directory + "/data.mdb") == 0o600)
        let reopened = try CookieStorage.persistent(directory: directory)
        defer { reopened.close() }
        #expect(reopened.cookies.map(\.name) == ["keep", "replaced"])
        let keep = try #require(reopened.cookies.first)
        #expect(keep.isSecure && keep.isHTTPOnly && keep.sameSite == .lax && keep.path == "/" && keep.isHostOnly)
        #expect(reopened.cookies.last?.value == "new")
        // `replaced` has the default path /app, longer than /: it comes first.
        #expect(reopened.cookieHeader(for: Self.url("https://example.com/app/x")) == "replaced=new; keep=1")
        #expect(reopened.cookieHeader(for: Self.url("https://example.com/other")) == "keep=1")
        reopened.removeAll()
        reopened.close()
        let cleared = try CookieStorage.persistent(directory: directory)
        #expect(cleared.cookies.isEmpty)
        cleared.close()
    }

    @Test("A memory store writes nothing and forgets with its instance")
    func memoryOnly() {
        let storage = CookieStorage()
        storage.store(setCookieValues: ["a=1; Max-Age=60"], from: Self.url("http://example.com/"), policy: .always)
        #expect(storage.directory == nil)
        #expect(storage.cookies.count == 1)
        #expect(CookieStorage().cookies.isEmpty)
    }

    @Test("A session with the jar stores Set-Cookie and sends Cookie; with passthrough (no store) it adds nothing")
    func jarInSession() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/login" {
                respond.send(status: 200, headers: ["Set-Cookie": "sid=abc; Path=/; HttpOnly"], body: "in")
            } else {
                respond.send(status: 200, body: request.headerFields["Cookie"] ?? "-")
            }
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.cookieStorage = CookieStorage()
        configuration.httpCookieAcceptPolicy = .always
        let jar = Session(configuration: configuration)
        _ = try await jar.data(for: Request(url: origin.url("/login")))
        let (body, _) = try await jar.data(for: Request(url: origin.url("/page")))
        #expect(String(buffer: body) == "sid=abc")
        // The client's own Cookie field is left as it is.
        let (own, _) = try await jar.data(for: Request(url: origin.url("/page"), headerFields: ["Cookie": "mine=1"]))
        #expect(String(buffer: own) == "mine=1")

        let passthrough = Session(configuration: .ephemeral)
        _ = try await passthrough.data(for: Request(url: origin.url("/login")))
        let (none, _) = try await passthrough.data(for: Request(url: origin.url("/page")))
        #expect(String(buffer: none) == "-")
    }
}
