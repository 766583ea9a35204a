import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTesting

@Suite("cookies: jar versus passthrough, end to end through the runtime's sessions", .timeLimit(.minutes(1)))
struct CookieModeTests {
    /// `/login` sets `sid`; every other path echoes the Cookie field it got (`-` for none).
    static func origin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            if request.path == "/login" {
                respond.send(status: 200, headers: ["Set-Cookie": "sid=abc; Path=/; Max-Age=3600"], body: "in")
            } else {
                respond.send(status: 200, body: request.headerFields["Cookie"] ?? "-")
            }
        }
    }

    /// `jar`: the jar session (default kind) for localhost and 127.0.0.1 on that port; `ephemeral`
    /// and `refusing`: ephemeral jars, the second with cookie-accept never; anything else passthrough.
    static func yaml(jar: Int = 1, ephemeral: Int = 2, refusing: Int = 3) -> String {
        """
        sessions:
          default:
            configuration: default
            cookies: passthrough
          jar:
            configuration: default
            cookies: jar
            cookie-accept: always
          private-jar:
            configuration: ephemeral
            cookies: jar
            cookie-accept: always
          refusing:
            configuration: ephemeral
            cookies: jar
            cookie-accept: never
        hosts:
          - match: ["localhost:\(jar)", "127.0.0.1:\(jar)"]
            session: jar
          - match: "127.0.0.1:\(ephemeral)"
            session: private-jar
          - match: "127.0.0.1:\(refusing)"
            session: refusing
        """
    }

    static func body(
        _ session: Session,
        _ url: HTTPURL,
        cookie: String? = nil
    ) async throws -> (String, HTTPResponseHead) {
        var request = Request(url: url)
        if let cookie { request.headerFields.add(name: "Cookie", value: cookie) }
        let (body, response) = try await session.data(for: request)
        return (String(buffer: body), response)
    }

    @Test("passthrough: the client's Cookie and the origin's Set-Cookie pass untouched; nothing is kept")
    func passthrough() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stores = try CookieCredentialStores(directory: directory)
        defer { stores.close() }
        let runtime = PolicyRuntime(configuration: try Fixture.load(Self.yaml()), sourceFile: nil, stores: stores)
        defer { runtime.shutdown() }
        let route = runtime.route(origin.url("/login"))
        #expect(route.sessionName == "default")
        #expect(route.session.configuration.cookieStorage == nil)
        let (_, login) = try await Self.body(route.session, origin.url("/login"), cookie: "client=1")
        #expect(login.headerFields["Set-Cookie"] == "sid=abc; Path=/; Max-Age=3600")
        #expect(origin.requests.last?.headerFields.values(for: "Cookie") == ["client=1"])
        #expect(try await Self.body(route.session, origin.url("/page")).0 == "-")
        #expect(try await Self.body(route.session, origin.url("/page"), cookie: "a=1; b=2").0 == "a=1; b=2")
        stores.flush()
        #expect(stores.cookieStorage?.cookies.isEmpty == true)
    }

    @Test("jar: Set-Cookie is stored (on disk for a default session) and Cookie is added to later requests")
    func jar() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = Self.yaml(jar: origin.port)
        do {
            let stores = try CookieCredentialStores(directory: directory)
            let runtime = PolicyRuntime(configuration: try Fixture.load(yaml), sourceFile: nil, stores: stores)
            let route = runtime.route(origin.url("/", host: "localhost"))
            #expect(route.sessionName == "jar")
            let session = route.session
            #expect(session.configuration.cookieStorage === stores.cookieStorage)
            _ = try await Self.body(session, origin.url("/login", host: "localhost"))
            #expect(try await Self.body(session, origin.url("/page", host: "localhost")).0 == "sid=abc")
            // The same session, another host: a host-only cookie does not go there.
            #expect(runtime.route(origin.url("/")).session === session)
            #expect(try await Self.body(session, origin.url("/page")).0 == "-")
            runtime.shutdown()
            stores.close()
        }
        // After a restart the persistent cookie is still in the jar.
        let stores = try CookieCredentialStores(directory: directory)
        defer { stores.close() }
        #expect(stores.cookieStorage?.cookies.map(\.name) == ["sid"])
        let runtime = PolicyRuntime(configuration: try Fixture.load(yaml), sourceFile: nil, stores: stores)
        defer { runtime.shutdown() }
        let session = runtime.route(origin.url("/", host: "localhost")).session
        #expect(try await Self.body(session, origin.url("/again", host: "localhost")).0 == "sid=abc")
    }

    @Test("An ephemeral jar keeps cookies in its own memory; cookie-accept: never keeps none")
    func ephemeralAndNever() async throws {
        let first = try await Self.origin()
        defer { first.stop() }
        let second = try await Self.origin()
        defer { second.stop() }
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stores = try CookieCredentialStores(directory: directory)
        defer { stores.close() }
        let runtime = PolicyRuntime(
            configuration: try Fixture.load(Self.yaml(ephemeral: first.port, refusing: second.port)),
            sourceFile: nil,
            stores: stores
        )
        defer { runtime.shutdown() }
        let ephemeral = runtime.route(first.url("/")).session
        #expect(ephemeral.configuration.cookieStorage != nil)
        #expect(ephemeral.configuration.cookieStorage !== stores.cookieStorage)
        _ = try await Self.body(ephemeral, first.url("/login"))
        #expect(try await Self.body(ephemeral, first.url("/page")).0 == "sid=abc")
        stores.flush()
        #expect(stores.cookieStorage?.cookies.isEmpty == true)
        #expect(ephemeral.configuration.credentialStorage != nil)
        #expect(ephemeral.configuration.credentialStorage?.store == nil)

        let refusing = runtime.route(second.url("/")).session
        _ = try await Self.body(refusing, second.url("/login"))
        #expect(try await Self.body(refusing, second.url("/page")).0 == "-")
    }
}
