import Foundation
public import TollgateHTTP

/// An h2-only https origin in Python (`h2` and `ssl`, the TestPKI's certificate) that misbehaves
/// on purpose, for the session's HTTP/2 retry rule (RFC 9113 §8.7). It answers every request with
/// `METHOD PATH BODY-LENGTH conn N` and prints one line per event on its standard output:
/// `request CONN STREAM METHOD PATH` for each request head, `refused CONN STREAM PATH`,
/// `answered CONN STREAM METHOD PATH`, `goaway CONN LAST`.
///
/// Modes:
/// - `refuse`: a request whose path starts with `/rst` is refused with RST_STREAM REFUSED_STREAM
///   the first time its path is seen; `/rst-always…` every time.
/// - `goaway`: on the first connection, once four requests are complete it answers the first,
///   sends GOAWAY whose last stream id is the second's (streams 1 and 3 may have been processed,
///   5 and 7 were not), and closes the connection without answering the second. Later
///   connections answer everything.
public final class PythonH2Origin: Sendable {
    /// python3, when it can import `h2` (`make deps` installs it).
    public static let python: String? = {
        guard let python = pythonOnPath else { return nil }
        return (try? ChildProcess.runBlocking(python, ["-c", "import h2"]))?.status == 0 ? python : nil
    }()

    /// The first python3 on the PATH (where `make deps` installs its modules).
    public static let pythonOnPath: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    public let process: ChildProcess
    public let port: Int
    private let directory: URL

    private init(process: ChildProcess, port: Int, directory: URL) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    /// Starts the origin in `mode` (`refuse` or `goaway`).
    public static func start(pki: TestPKI, mode: String) async throws -> PythonH2Origin {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pyh2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (certificate, key) = try pki.writeServerFiles(in: directory)
        let process = try ChildProcess(python ?? "python3", ["-c", script, mode, certificate, key])
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.isRunning {
            if let line = process.standardOutput.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }),
                let port = Int(line.dropFirst("listening ".count))
            {
                return PythonH2Origin(process: process, port: port, directory: directory)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.kill()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the Python h2 origin did not start: \(process.standardError)"])
    }

    public func url(_ path: String) -> HTTPURL {
        HTTPURL(string: "https://127.0.0.1:\(port)\(path)")!
    }

    /// The output lines that start with `event` and end with `path` (e.g. `answered`, `/a`).
    public func lines(_ event: String, path: String) -> [Substring] {
        process.standardOutput.split(separator: "\n").filter { $0.hasPrefix(event + " ") && $0.hasSuffix(" " + path) }
    }

    /// ``lines(_:path:)`` once at least `count` are in (its output is read as it comes, so a line
    /// the origin printed before it answered may still be on its way), or after five seconds.
    public func lines(_ event: String, path: String, atLeast count: Int) async -> [Substring] {
        let deadline = ContinuousClock.now + .seconds(5)
        while lines(event, path: path).count < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return lines(event, path: path)
    }

    /// How many connections it accepted.
    public var connectionCount: Int {
        process.standardOutput.split(separator: "\n").filter { $0.hasPrefix("connection ") }.count
    }

    public func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }

    static let script = #"""
        import socket, ssl, struct, sys, threading, time
        import h2.config, h2.connection, h2.errors, h2.events
        mode, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["h2"])
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        lock = threading.Lock()
        seen = set()
        def log(*words):
            with lock:
                print(*words, flush=True)
        def frame(kind, flags, stream, payload):
            return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
        def serve(sock, cid):
            sock.settimeout(30)
            tls = context.wrap_socket(sock, server_side=True)
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
            c.initiate_connection()
            tls.sendall(c.data_to_send())
            streams, ended = {}, []
            def answer(sid):
                s = streams.pop(sid)
                c.send_headers(sid, [(":status", "200")])
                c.send_data(sid, ("%s %s %d conn %d" % (s["method"], s["path"], len(s["body"]), cid)).encode(), end_stream=True)
                log("answered", cid, sid, s["method"], s["path"])
            while True:
                try:
                    data = tls.recv(65536)
                except (OSError, ssl.SSLError):
                    data = b""
                if not data:
                    return
                for e in c.receive_data(data):
                    if isinstance(e, h2.events.RequestReceived):
                        h = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v for k, v in e.headers}
                        path, method = h[":path"], h[":method"]
                        log("request", cid, e.stream_id, method, path)
                        refuse = False
                        if mode == "refuse" and path.startswith("/rst"):
                            with lock:
                                refuse = path.startswith("/rst-always") or path not in seen
                                seen.add(path)
                        if refuse:
                            c.reset_stream(e.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                            log("refused", cid, e.stream_id, path)
                        else:
                            streams[e.stream_id] = {"path": path, "method": method, "body": b""}
                            if e.stream_ended is not None:
                                ended.append(e.stream_id)
                    elif isinstance(e, h2.events.DataReceived):
                        if e.flow_controlled_length:
                            c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                        if e.stream_id in streams:
                            streams[e.stream_id]["body"] += e.data
                            if e.stream_ended is not None:
                                ended.append(e.stream_id)
                    elif isinstance(e, h2.events.StreamEnded) and e.stream_id in streams and e.stream_id not in ended:
                        ended.append(e.stream_id)
                if mode == "goaway" and cid == 1:
                    if len(ended) >= 4:
                        first, second = sorted(ended)[0:2]
                        answer(first)
                        tls.sendall(c.data_to_send())
                        # By hand: the library sends nothing more once it sent GOAWAY.
                        tls.sendall(frame(7, 0, 0, struct.pack(">II", second, 0)))
                        log("goaway", cid, second)
                        time.sleep(0.5)
                        tls.close()
                        return
                else:
                    for sid in ended:
                        if sid in streams:
                            answer(sid)
                    ended = []
                tls.sendall(c.data_to_send())
        print("listening", server.getsockname()[1], flush=True)
        count = 0
        while True:
            sock, _ = server.accept()
            count += 1
            log("connection", count)
            threading.Thread(target=serve, args=(sock, count), daemon=True).start()
        """#
}
