public import Foundation
public import TollgateHTTP

/// nginx (Debian nginx-light) as an h2 https origin, `listen … ssl http2` with the TestPKI's
/// certificate, ending each connection with GOAWAY after `keepalive_requests` streams. Its access
/// log has one line per request it processed: `CONNECTION REQUEST-NUMBER METHOD URI PROTOCOL STATUS`.
public final class NGINXOrigin: Sendable {
    public static let executable: String? = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isInstalled: Bool { executable != nil }

    public let process: ChildProcess
    public let port: Int
    public let directory: URL

    private init(process: ChildProcess, port: Int, directory: URL) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    /// Starts nginx in the foreground; every location answers `200 METHOD URI` from the config,
    /// but those `locations` (nginx `location` blocks, put in its `server` first) answer.
    public static func start(pki: TestPKI, keepaliveRequests: Int, locations: String = "") async throws -> NGINXOrigin {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
        let (certificate, key) = try pki.writeServerFiles(in: directory)
        // Workers run as an unprivileged user when started as root: they only write the logs. Every
        // temporary path is in the directory, so that nginx also starts as a user other than root.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.appendingPathComponent("logs").path)
        for _ in 0..<5 {
            let port = ClosedPort().port
            let configuration = """
                worker_processes 1;
                daemon off;
                master_process on;
                pid \(directory.path)/nginx.pid;
                error_log \(directory.path)/logs/error.log;
                events { worker_connections 256; }
                http {
                  log_format requests '$connection $connection_requests $request_method $request_uri $server_protocol $status';
                  access_log \(directory.path)/logs/access.log requests;
                  client_body_temp_path \(directory.path)/logs/body;
                  proxy_temp_path \(directory.path)/logs/proxy;
                  fastcgi_temp_path \(directory.path)/logs/fastcgi;
                  uwsgi_temp_path \(directory.path)/logs/uwsgi;
                  scgi_temp_path \(directory.path)/logs/scgi;
                  keepalive_requests \(keepaliveRequests);
                  server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(key);
                    \(locations)
                    location / { return 200 "$request_method $request_uri\\n"; }
                  }
                }
                """
            let file = directory.appendingPathComponent("nginx.conf")
            try configuration.write(to: file, atomically: true, encoding: .utf8)
            let process = try ChildProcess(executable ?? "nginx", ["-p", directory.path, "-c", file.path, "-e", "\(directory.path)/logs/error.log"])
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline, process.isRunning {
                if FileManager.default.fileExists(atPath: "\(directory.path)/nginx.pid"), isListening(port) {
                    return NGINXOrigin(process: process, port: port, directory: directory)
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            process.kill()
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "nginx did not start"])
    }

    private static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return connected == 0
    }

    public func url(_ path: String) -> HTTPURL {
        HTTPURL(string: "https://127.0.0.1:\(port)\(path)")!
    }

    /// The access log's lines (one per request nginx processed).
    public var accessLog: [Substring] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }

    /// Stops nginx (SIGTERM to the master, which stops its worker; the master is the process this
    /// started; waited for up to three seconds) and removes its files.
    public func stop() {
        process.send(SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
