import Testing
import TollgateHTTP
import TollgatePolicy

@Suite("hosts[].compress: read from the file")
struct CompressionLoadingTests {
    private func rule(_ value: String) throws -> HostRule.Compression? {
        try Fixture.load("hosts:\n  - match: site.example\n    compress: \(value)\n").hosts.first?.compress
    }

    @Test("true takes the defaults, false nothing, a mapping its types, min-size and level; explain shows it")
    func forms() throws {
        #expect(try rule("true") == HostRule.Compression())
        #expect(try rule("false") == nil)
        let chosen = try #require(try rule("{ types: [Application/JSON, text/html], min-size: 0, level: 9 }"))
        #expect(chosen.types == ["application/json", "text/html"])
        #expect(chosen.minimumSize == 0)
        #expect(chosen.level == 9)
        #expect(chosen.compresses(contentType: "application/json; charset=utf-8"))
        #expect(!chosen.compresses(contentType: "text/css"))
        #expect(try rule("{ min-size: 4KiB }")?.minimumSize == 4_096)
        let configuration = try Fixture.load("hosts:\n  - match: site.example\n    compress: { types: [text/html], level: 1 }\n")
        let lines = PolicyDecisions(configuration: configuration).explain(HTTPURL(string: "https://site.example/")!).split(separator: "\n").map(String.init)
        #expect(lines.contains("compress: br level 5, gzip level 1 from 1024 bytes for text/html"), "\(lines)")
        let gzipOnly = try #require(try rule("{ encodings: [GZIP], br-level: 11 }"))
        #expect(gzipOnly.encodings == ["gzip"] && gzipOnly.brotliLevel == 11)
        #expect(try rule("{ encodings: [gzip, br, gzip] }")?.encodings == ["gzip", "br"])
        #expect(try rule("true")?.encodings == ["br", "gzip"])
    }

    @Test("A type with a wildcard or parameters, a level out of range, or another key names its line")
    func problems() {
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { types: [\"text/*\"] }\n").first?.hasPrefix("t.yaml:3: hosts[0].compress.types[0]:") == true)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { types: [\"text/html; charset=utf-8\"] }\n").count == 1)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { level: 10 }\n").first?.contains("must be from 1 to 9") == true)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { brotli: true }\n").count == 1)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { encodings: [zstd] }\n").first?.contains("br or gzip") == true)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { encodings: [] }\n").count == 1)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: { br-level: 12 }\n").count == 1)
        #expect(Fixture.problems("hosts:\n  - match: a.example\n    compress: yes please\n").count == 1)
    }
}
