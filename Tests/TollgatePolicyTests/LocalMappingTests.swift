import Foundation
import Testing
import TollgateHTTP
@testable import TollgatePolicy

@Suite("hosts[].map-local: paths answered from local files")
struct LocalMappingTests {
    @Test("A file answers its path exactly; a directory the paths under it, index.html for itself; leaving it is refused")
    func matching() {
        let file = HostRule.LocalMapping(path: "/v1/flags", source: .file("/mocks/flags.json"))
        #expect(file.match("/v1/flags") == .file("/mocks/flags.json"))
        #expect(file.match("/v1/flags/x") == nil && file.match("/v1/flag") == nil)
        let directory = HostRule.LocalMapping(path: "/static", source: .directory("/srv/build"))
        #expect(directory.match("/static") == .file("/srv/build/index.html"))
        #expect(directory.match("/static/") == .file("/srv/build/index.html"))
        #expect(directory.match("/static/css/site.css") == .file("/srv/build/css/site.css"))
        #expect(directory.match("/static/docs/") == .file("/srv/build/docs/index.html"))
        #expect(directory.match("/static/a%20b.txt") == .file("/srv/build/a b.txt"))
        #expect(directory.match("/staticky") == nil && directory.match("/other/static/x") == nil)
        for escape in ["/static/../etc/passwd", "/static/%2e%2e/secret", "/static/a%2fb", "/static/x%00y", "/static/./x"] {
            guard case .refused = directory.match(escape) else {
                Issue.record("not refused: \(escape)")
                continue
            }
        }
    }

    @Test("The loader reads file and directory mappings, resolved; refuses a bad path, both or neither source, missing files; explain says them")
    func loading() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-map-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("static"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "{}".write(to: directory.appendingPathComponent("flags.json"), atomically: true, encoding: .utf8)
        let yaml = """
            hosts:
              - match: api.example
                map-local:
                  - { path: /v1/flags, file: "\(directory.path)/flags.json" }
                  - { path: /static/, directory: "\(directory.path)/static" }
            """
        let configuration = try Fixture.load(yaml)
        let decision = PolicyDecisions(configuration: configuration).decide(host: "api.example", port: 443)
        #expect(decision.mapLocal.map(\.path) == ["/v1/flags", "/static/"])
        let explained = PolicyDecisions(configuration: configuration).explain(try #require(HTTPURL(string: "https://api.example/")))
        #expect(explained.contains("map-local: /v1/flags from the file \(directory.path)/flags.json"), "\(explained)")
        let problems = Fixture.problems(
            """
            hosts:
              - match: api.example
                map-local:
                  - { path: "v1/flags", file: "\(directory.path)/flags.json" }
                  - { path: /a, file: "\(directory.path)/flags.json", directory: "\(directory.path)" }
                  - { path: /b }
                  - { path: /c, directory: "\(directory.path)/flags.json" }
                  - { path: /d, file: "\(directory.path)/missing.json" }
            """,
            checkFiles: true
        )
        #expect(problems.contains { $0.contains("'v1/flags' is not a request path") }, "\(problems)")
        #expect(problems.filter { $0.contains("give exactly one of file and directory") }.count == 2, "\(problems)")
        #expect(problems.contains { $0.contains("flags.json\" is not a directory") }, "\(problems)")
        #expect(problems.contains { $0.contains("missing.json") }, "\(problems)")
    }
}
