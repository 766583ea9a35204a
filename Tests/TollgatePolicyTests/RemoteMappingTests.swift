import Testing
import TollgateHTTP
import TollgatePolicy

@Suite("hosts[].map-remote: which URL a request goes to")
struct RemoteMappingTests {
    private func mapped(_ path: String, _ to: String, _ request: String) -> String? {
        HostRule.RemoteMapping(path: path, to: HTTPURL(string: to)!).map(HTTPURL(string: request)!)?.absoluteString
    }

    @Test("The matched prefix becomes to's path, at a / boundary; the rest and the query are kept")
    func prefixes() {
        #expect(mapped("/v2/", "http://127.0.0.1:8080/api/v2/", "https://api.example/v2/users?page=2") == "http://127.0.0.1:8080/api/v2/users?page=2")
        #expect(mapped("/v2/", "http://127.0.0.1:8080/api/v2/", "https://api.example/v2/") == "http://127.0.0.1:8080/api/v2/")
        #expect(mapped("/v2/", "http://127.0.0.1:8080/api/v2/", "https://api.example/v2") == nil)
        #expect(mapped("/old", "http://h.test/new", "http://a.test/old") == "http://h.test/new")
        #expect(mapped("/old", "http://h.test/new", "http://a.test/old/x") == "http://h.test/new/x")
        #expect(mapped("/old", "http://h.test/new/", "http://a.test/old/x") == "http://h.test/new/x")
        #expect(mapped("/old/", "http://h.test/new", "http://a.test/old/x") == "http://h.test/new/x")
        #expect(mapped("/old", "http://h.test/new", "http://a.test/oldish") == nil)
        #expect(mapped("/", "https://staging.example", "https://www.example/a/b?c") == "https://staging.example/a/b?c")
        #expect(mapped("/", "https://staging.example:8443/", "https://www.example/") == "https://staging.example:8443/")
    }

    @Test("Read from the file: path defaults to /; to is an absolute http(s) URL without a query; explain shows it")
    func loading() throws {
        let configuration = try Fixture.load(
            "hosts:\n  - match: www.example\n    map-remote:\n      - { path: /api/, to: \"http://127.0.0.1:8080/\" }\n      - { to: \"https://staging.example\" }\n"
        )
        let mappings = try #require(configuration.hosts.first?.mapRemote)
        #expect(mappings.map(\.path) == ["/api/", "/"])
        let lines = PolicyDecisions(configuration: configuration).explain(HTTPURL(string: "https://www.example/")!)
        #expect(lines.contains("map-remote: /api/ and under it to http://127.0.0.1:8080/"), "\(lines)")
        for (entry, key) in [
            ("{ to: \"ftp://h.example/\" }", "hosts[0].map-remote[0].to"),
            ("{ to: \"http://h.example/?a=1\" }", "hosts[0].map-remote[0].to"),
            ("{ path: api, to: \"http://h.example/\" }", "hosts[0].map-remote[0].path"),
            ("{ path: /a }", "hosts[0].map-remote[0]"),
        ] {
            let problems = Fixture.problems("hosts:\n  - match: www.example\n    map-remote: [\(entry)]\n")
            #expect(problems.count == 1 && problems[0].hasPrefix("t.yaml:3: \(key):"), "\(entry): \(problems)")
        }
    }

    private func reference(_ value: String, _ path: String, _ to: String, loaded: String, client: String) -> String? {
        HostRule.RemoteMapping(path: path, to: HTTPURL(string: to)!)
            .clientReference(for: value, loaded: HTTPURL(string: loaded)!, client: HTTPURL(string: client)!)
    }

    @Test("A Location into the mapped URL is written back for the client's URL; one outside it, or relative, is left")
    func locations() {
        let to = "http://127.0.0.1:8080/api/v2/"
        let loaded = "http://127.0.0.1:8080/api/v2/users?page=2"
        let client = "https://shop.example/v2/users?page=2"
        #expect(reference("http://127.0.0.1:8080/api/v2/login?next=%2F#top", "/v2/", to, loaded: loaded, client: client) == "https://shop.example/v2/login?next=%2F#top")
        #expect(reference("HTTP://127.0.0.1:8080/api/v2/", "/v2/", to, loaded: loaded, client: client) == "https://shop.example/v2/")
        #expect(reference("/api/v2/login", "/v2/", to, loaded: loaded, client: client) == "/v2/login")
        #expect(reference("//127.0.0.1:8080/api/v2/a", "/v2/", to, loaded: loaded, client: client) == "//shop.example/v2/a")
        // Outside the mapped prefix, on another host or port, or relative: unchanged.
        #expect(reference("http://127.0.0.1:8080/other", "/v2/", to, loaded: loaded, client: client) == nil)
        #expect(reference("/api/v2x", "/v2/", to, loaded: loaded, client: client) == nil)
        #expect(reference("http://127.0.0.1:9090/api/v2/login", "/v2/", to, loaded: loaded, client: client) == nil)
        #expect(reference("https://elsewhere.example/", "/v2/", to, loaded: loaded, client: client) == nil)
        #expect(reference("login", "/v2/", to, loaded: loaded, client: client) == nil)
        // A client port that is not the default stays in the URL; a whole-host mapping keeps the path.
        #expect(reference("https://staging.example/a?b", "/", "https://staging.example", loaded: "https://staging.example/", client: "http://www.example:8000/") == "http://www.example:8000/a?b")
        // The inverse of map(_:) at every joining of slashes.
        for (path, target, request) in [("/old", "http://h.test/new", "http://a.test/old/x"), ("/old/", "http://h.test/new", "http://a.test/old/x"), ("/old", "http://h.test/new/", "http://a.test/old/x"), ("/", "http://h.test/p", "http://a.test/q/r")] {
            let mapping = HostRule.RemoteMapping(path: path, to: HTTPURL(string: target)!)
            let mapped = mapping.map(HTTPURL(string: request)!)!
            #expect(mapping.clientReference(for: mapped.absoluteString, loaded: mapped, client: HTTPURL(string: request)!) == request, "\(path) \(target)")
        }
    }

    @Test("A Set-Cookie's Domain naming the mapped host is dropped and its Path under the mapped prefix swapped back; other cookies are left")
    func cookies() {
        let mapping = HostRule.RemoteMapping(path: "/v2/", to: HTTPURL(string: "https://api.staging.example/api/v2/")!)
        let client = HTTPURL(string: "https://api.example/v2/users")!
        #expect(mapping.clientSetCookie("sid=1; Domain=.staging.example; Path=/api/v2/; HttpOnly", client: client) == "sid=1; Path=/v2/; HttpOnly")
        #expect(mapping.clientSetCookie("sid=1; domain=API.STAGING.EXAMPLE", client: client) == "sid=1")
        #expect(mapping.clientSetCookie("sid=1; Path=/api/v2/x; Secure", client: client) == "sid=1; Path=/v2/x; Secure")
        #expect(mapping.clientSetCookie("sid=1; Domain=other.example; Path=/", client: client) == nil)
        #expect(mapping.clientSetCookie("sid=1", client: client) == nil)
        // The same host on both sides: its Domain is the client's too, and stays.
        let samehost = HostRule.RemoteMapping(path: "/v2/", to: HTTPURL(string: "https://api.example/v3/")!)
        #expect(samehost.clientSetCookie("sid=1; Domain=api.example", client: client) == nil)
    }
}
