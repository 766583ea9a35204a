public import Foundation
public import TollgateHTTP

/// nghttp2's `nghttpd` (Debian nghttp2-server) as an h2-only https origin serving files from a
/// temporary directory, with the TestPKI's certificate, run verbose so its frames can be counted.
public final class NGHTTPDOrigin: Sendable {
    /// Debian installs it in /usr/sbin.
    public static let executable: String? = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isInstalled: Bool { executable != nil }

    public let process: ChildProcess
    public let port: Int
    /// Holds the certificate, the key and `root/`, the document root.
    public let directory: URL

    private init(process: ChildProcess, port: Int, directory: URL) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    /// Starts nghttpd with `files` (path → contents) in its document root; POST and PUT bodies are
    /// echoed back (`--echo-upload`).
    public static func start(pki: TestPKI, files: [String: Data]) async throws -> NGHTTPDOrigin {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nghttpd-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for (path, contents) in files { try contents.write(to: root.appendingPathComponent(path)) }
        let (certificate, key) = try pki.writeServerFiles(in: directory)
        // A port that was free a moment ago; another try with another port if nghttpd cannot bind it.
        for _ in 0..<5 {
            let port = ClosedPort().port  // released at once (its socket closes with it)
            let process = try ChildProcess(
                executable ?? "nghttpd", ["-v", "--echo-upload", "-a", "127.0.0.1", "-d", root.path, String(port), key, certificate]
            )
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline, process.isRunning {
                // It prints "IPv4: listen 127.0.0.1:PORT" once it listens.
                if process.standardOutput.contains("listen") {
                    return NGHTTPDOrigin(process: process, port: port, directory: directory)
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            process.kill()
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "nghttpd did not start"])
    }

    public func url(_ path: String) -> HTTPURL {
        HTTPURL(string: "https://127.0.0.1:\(port)\(path)")!
    }

    /// The HTTP/2 sessions (connections) nghttpd reports in its verbose output (`[id=N]`).
    public var sessionCount: Int {
        let text = process.standardOutput
        var ids: Set<Substring> = []
        for line in text.split(separator: "\n") where line.hasPrefix("[id=") {
            if let end = line.firstIndex(of: "]") { ids.insert(line[..<end]) }
        }
        return ids.count
    }

    public func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
