import Foundation
import TollgatePolicy

/// Test helpers: load YAML text and render its problems as `check-config` prints them.
enum Fixture {
    /// The problems of `yaml` as `FILE:LINE: KEY: message` lines, file named `t.yaml`.
    static func problems(_ yaml: String, checkFiles: Bool = false, base: String? = nil) -> [String] {
        PolicyLoader(checkFiles: checkFiles, homeDirectory: "/home/test")
            .problems(inYAML: yaml, file: "t.yaml", baseDirectory: base)
            .map(\.description)
    }

    /// The configuration `yaml` loads to; records an issue and returns the default when it has problems.
    static func load(_ yaml: String) throws -> PolicyConfiguration {
        try PolicyLoader(checkFiles: false, homeDirectory: "/home/test")
            .load(yaml: yaml, file: "t.yaml", baseDirectory: "/etc/tollgate")
    }

    /// The repository's root (this file is Tests/TollgatePolicyTests/Support.swift).
    static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A fresh empty directory under the temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "tollgate-policy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
