import Foundation

/// The built `tollgate` executable, for tests that run the command line: `TOLLGATE_BINARY` when
/// set (to run them against another build), else next to the test bundle in the build products
/// directory (the release one under `make test-release`), else `.build/debug/tollgate`.
public enum TollgateBinary {
    /// Its path, or nil when it has not been built.
    public static let path: String? = {
        if let chosen = ProcessInfo.processInfo.environment["TOLLGATE_BINARY"], !chosen.isEmpty {
            // Taken as given, even when missing: the tests then fail rather than being skipped.
            return chosen
        }
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent("tollgate"))
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("tollgate"))
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("tollgate"))
        var packageRoot = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { packageRoot.deleteLastPathComponent() }  // Sources/TollgateTesting/this file
        candidates.append(packageRoot.appendingPathComponent(".build/debug/tollgate"))
        return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}
