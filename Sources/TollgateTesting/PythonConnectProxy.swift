import Foundation

/// A minimal HTTP proxy in Python that only tunnels (`CONNECT host:port` → `200`, then bytes both
/// ways), a parent that is not Tollgate, for sessions with an `upstreamProxy`. It prints
/// `connect HOST:PORT` on its standard output for each tunnel.
public final class PythonConnectProxy: Sendable {
    public let process: ChildProcess
    public let port: Int

    private init(process: ChildProcess, port: Int) {
        self.process = process
        self.port = port
    }

    public static func start() async throws -> PythonConnectProxy {
        let python = PythonH2Origin.pythonOnPath ?? "/usr/bin/python3"
        let process = try ChildProcess(python, ["-c", script])
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.isRunning {
            if let line = process.standardOutput.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }),
                let port = Int(line.dropFirst("listening ".count))
            {
                return PythonConnectProxy(process: process, port: port)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.kill()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the Python CONNECT proxy did not start: \(process.standardError)"])
    }

    /// The tunnels opened so far (`HOST:PORT` each).
    public var tunnels: [Substring] {
        process.standardOutput.split(separator: "\n").filter { $0.hasPrefix("connect ") }.map { $0.dropFirst("connect ".count) }
    }

    public func stop() { process.kill() }

    static let script = #"""
        import socket, threading
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        def pipe(source, sink):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    sink.sendall(data)
            except OSError:
                pass
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        def tunnel(client):
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(4096)
                if not data:
                    return client.close()
                head += data
            words = head.split(b"\r\n")[0].split(b" ")
            if words[0] != b"CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return client.close()
            host, port = words[1].decode().rsplit(":", 1)
            if host not in ("127.0.0.1", "localhost", "[::1]"):
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return client.close()
            upstream = socket.create_connection((host.strip("[]"), int(port)))
            print("connect %s:%s" % (host, port), flush=True)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
            pipe(client, upstream)
        print("listening", server.getsockname()[1], flush=True)
        while True:
            client, _ = server.accept()
            threading.Thread(target=tunnel, args=(client,), daemon=True).start()
        """#
}
