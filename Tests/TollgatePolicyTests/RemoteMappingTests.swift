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
}
