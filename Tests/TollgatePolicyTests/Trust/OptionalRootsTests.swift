import Foundation
import Testing
import TollgatePolicy

/// `trust.roots` entries written `{ file: PATH, optional: true }`: a developer's local CA that
/// not every machine has.
@Suite("Optional roots files", .timeLimit(.minutes(1)))
struct OptionalRootsTests {
    private func yaml(_ roots: String) -> String {
        """
        hosts:
          - match: "localhost"
            trust:
              roots: \(roots)
        """
    }

    @Test("A missing optional file is no problem; a missing required one is, in either spelling")
    func missingFiles() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loader = PolicyLoader(checkFiles: true)
        let optional = loader.problems(
            inYAML: yaml("[system, { file: \"ca.pem\", optional: true }]"), file: "t.yaml", baseDirectory: directory
        )
        #expect(optional.isEmpty, "\(optional)")
        let required = loader.problems(inYAML: yaml("[system, { file: \"ca.pem\" }]"), file: "t.yaml", baseDirectory: directory)
        #expect(required.count == 1)
        #expect(required.first?.description.contains("cannot read") == true, "\(required)")
        let plain = loader.problems(inYAML: yaml("[system, \"ca.pem\"]"), file: "t.yaml", baseDirectory: directory)
        #expect(plain.count == 1)
    }

    @Test("An optional file that exists is checked like any other, and kept apart from the required ones")
    func presentFile() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/ca.pem"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("placeholder\n".utf8)))
        let loader = PolicyLoader(checkFiles: true)
        let configuration = try loader.load(yaml: yaml("[{ file: \"ca.pem\", optional: true }]"), file: "t.yaml", baseDirectory: directory)
        let roots = try #require(configuration.hosts.first?.trust.roots)
        #expect(roots.optionalBundles == [path])
        #expect(roots.bundles.isEmpty)
        #expect(!roots.includesSystem)
        #expect(roots.description == "\(path) (if present)")

        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path) }
        if getuid() != 0 {  // root reads anything
            let unreadable = loader.problems(inYAML: yaml("[{ file: \"ca.pem\", optional: true }]"), file: "t.yaml", baseDirectory: directory)
            #expect(unreadable.count == 1)
        }
    }

    @Test("A roots mapping with an unknown key or no file is reported at its line")
    func badMappings() {
        let loader = PolicyLoader(checkFiles: false)
        let unknown = loader.problems(inYAML: yaml("[{ file: \"a.pem\", optinal: true }]"), file: "t.yaml", baseDirectory: nil)
        #expect(unknown.map(\.description).contains { $0.hasPrefix("t.yaml:4:") && $0.contains("optinal") }, "\(unknown)")
        let noFile = loader.problems(inYAML: yaml("[{ optional: true }]"), file: "t.yaml", baseDirectory: nil)
        #expect(noFile.map(\.description).contains { $0.contains("missing key \"file\"") }, "\(noFile)")
    }
}

@Suite("cache.set-cookie and cache.targeted-fields")
struct CacheStorageKeysTests {
    @Test("set-cookie takes strip or store; targeted-fields takes field names and defaults by listener mode")
    func keys() throws {
        let loader = PolicyLoader(checkFiles: false)
        let stored = try loader.load(yaml: "cache:\n  set-cookie: store\n", file: "t.yaml", baseDirectory: nil)
        #expect(stored.cache.setCookie == .store)
        #expect(PolicyConfiguration().cache.setCookie == .strip)
        let bad = loader.problems(inYAML: "cache:\n  set-cookie: keep\n", file: "t.yaml", baseDirectory: nil)
        #expect(bad.map(\.description).contains { $0.hasPrefix("t.yaml:2: cache.set-cookie:") }, "\(bad)")

        let forward = PolicyConfiguration()
        #expect(forward.cache.effectiveTargetedFields(listeners: forward.listeners).isEmpty)
        let gateway = try loader.load(
            yaml: "listen:\n  - { address: \"127.0.0.1:8443\", mode: reverse, upstream: \"http://127.0.0.1:9000\" }\n",
            file: "t.yaml", baseDirectory: nil
        )
        #expect(gateway.cache.effectiveTargetedFields(listeners: gateway.listeners) == ["Tollgate-Cache-Control", "CDN-Cache-Control"])
        let chosen = try loader.load(yaml: "cache:\n  targeted-fields: [Acme-Cache-Control]\n", file: "t.yaml", baseDirectory: nil)
        #expect(chosen.cache.effectiveTargetedFields(listeners: chosen.listeners) == ["Acme-Cache-Control"])
        let notAName = loader.problems(inYAML: "cache:\n  targeted-fields: [\"CDN Cache Control\"]\n", file: "t.yaml", baseDirectory: nil)
        #expect(notAName.count == 1, "\(notAName)")
    }
}
