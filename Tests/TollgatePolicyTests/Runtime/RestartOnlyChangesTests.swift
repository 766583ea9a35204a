import Foundation
import Testing
import TollgatePolicy

@Suite("What a reload leaves as the proxy started: restartOnlyChanges")
struct RestartOnlyChangesTests {
    private static let base = """
        listen:
          - address: "127.0.0.1:3128"
          - address: "127.0.0.1:8443"
            tls: { certificate: "a.pem", key: "a.key" }
        admin: { address: "127.0.0.1:9090" }
        cache: { path: "/var/cache/t", max-size: 1GiB }
        log: { access: stderr, format: combined, har-entries: 1000 }
        hosts:
          - match: "*.example.com"
            cache: { force-ttl: 10m }
        """

    private func changes(_ from: String, _ to: String) throws -> [String] {
        try Fixture.load(from).restartOnlyChanges(to: try Fixture.load(to))
    }

    private func changing(_ old: String, to new: String) throws -> [String] {
        try changes(Self.base, Self.base.replacingOccurrences(of: old, with: new))
    }

    @Test("Rules, limits, a TLS listener's certificates, har-entries and cache.tag-header are reloaded: nothing waits")
    func reloadable() throws {
        #expect(try changes(Self.base, Self.base) == [])
        #expect(try changing("force-ttl: 10m", to: "force-ttl: 1h") == [])
        #expect(try changing("\"a.pem\", key: \"a.key\"", to: "\"b.pem\", key: \"b.key\"") == [])
        #expect(try changing("har-entries: 1000", to: "har-entries: 10") == [])
        #expect(try changing("max-size: 1GiB", to: "max-size: 1GiB, tag-header: xkey") == [])
        #expect(try changes(Self.base, Self.base + "\nlimits: { max-header-bytes: 8KiB }") == [])
    }

    @Test("Listeners, the admin address, the cache, the log's target, format or level and interception wait for a restart")
    func restartOnly() throws {
        #expect(try changing("127.0.0.1:3128", to: "127.0.0.1:3129") == ["listen"])
        #expect(try changing("  - address: \"127.0.0.1:3128\"\n", to: "") == ["listen"])
        #expect(try changing("127.0.0.1:9090", to: "127.0.0.1:9091") == ["admin"])
        #expect(try changing("max-size: 1GiB", to: "max-size: 2GiB") == ["cache"])
        #expect(try changing("format: combined", to: "format: json") == ["log"])
        #expect(try changing("access: stderr", to: "access: off") == ["log"])
        #expect(try changes(Self.base, Self.base + "\ninterception: { ca-dir: \"/tmp/ca\" }") == ["interception"])
        #expect(
            try changes(Self.base, Self.base.replacingOccurrences(of: "127.0.0.1:9090", with: "127.0.0.1:9091") + "\ninterception: { ca-dir: \"/tmp/ca\" }")
                == ["admin", "interception"]
        )
    }
}
