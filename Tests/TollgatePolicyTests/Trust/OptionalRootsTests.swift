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

    @Test("A single mapping without a list is read as a one-entry list, as the reference says")
    func singleMapping() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loader = PolicyLoader(checkFiles: true)
        let configuration = try loader.load(yaml: yaml("{ file: \"ca.pem\", optional: true }"), file: "t.yaml", baseDirectory: directory)
        let roots = try #require(configuration.hosts.first?.trust.roots)
        #expect(roots.optionalBundles == [directory + "/ca.pem"])
        #expect(!roots.includesSystem)
        let required = loader.problems(inYAML: yaml("{ file: \"ca.pem\" }"), file: "t.yaml", baseDirectory: directory)
        #expect(required.first?.description.contains("cannot read") == true, "\(required)")
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
