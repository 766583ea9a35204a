import Foundation
import TollgateTesting

/// The HTTP/2 peers the h2 front's tests use: nghttp2's client tools, curl, and Python's `h2`
/// (frames crafted on purpose: a reader that never opens its window, a rapid-reset client, a
/// CONTINUATION flood).
enum HTTP2Peers {
    static let nghttp = "/usr/bin/nghttp"
    static let h2load = "/usr/bin/h2load"
    static let curl = "/usr/bin/curl"
    /// python3 on the PATH (where `make deps` installs `h2`).
    static let python = executableOnPath("python3")

    static func installed(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Whether python3 has the `h2` module (`make deps` installs it).
    static let hasPythonH2: Bool = {
        guard let python else { return false }
        return (try? ChildProcess.runBlocking(python, ["-c", "import h2"]))?.status == 0
    }()

    /// Runs a Python script with arguments; its output and status.
    static func runPython(_ script: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(python ?? "/usr/bin/python3", ["-c", script] + arguments)
    }

    /// `PORT PATH STALL_SECONDS`: a GET whose stream window is 16 bytes and is not opened for
    /// STALL_SECONDS after the first body bytes (no WINDOW_UPDATE); prints `stalled BYTES`, then opens the windows wide and
    /// reads to the end: `done STATUS BYTES`.
    static let slowReader = #"""
        import socket, sys, time
        import h2.connection, h2.config, h2.events, h2.settings
        port, path, stall = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
        s = socket.create_connection(("127.0.0.1", port))
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16})
        c.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", path)], end_stream=True)
        s.sendall(c.data_to_send())
        state = {"received": 0, "status": None, "ended": False}
        def pump(timeout):
            s.settimeout(timeout)
            try:
                data = s.recv(1 << 20)
            except socket.timeout:
                return
            if not data:
                raise SystemExit("closed with %d bytes" % state["received"])
            for e in c.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    state["status"] = dict(e.headers)[b":status"].decode()
                elif isinstance(e, h2.events.DataReceived):
                    state["received"] += len(e.data)
                elif isinstance(e, h2.events.StreamEnded):
                    state["ended"] = True
            s.sendall(c.data_to_send())
        # The stall counts from the first body bytes (the window's 16), however slow the origin.
        first = time.time() + 30
        while state["received"] < 16 and time.time() < first:
            pump(0.1)
        deadline = time.time() + stall
        while time.time() < deadline:
            pump(0.1)
        print("stalled", state["received"], flush=True)
        c.increment_flow_control_window(1 << 28)
        c.increment_flow_control_window(1 << 28, stream_id=1)
        s.sendall(c.data_to_send())
        end = time.time() + 60
        while not state["ended"] and time.time() < end:
            pump(1)
        print("done", state["status"], state["received"], flush=True)
        """#

    /// `PORT COUNT`: opens COUNT streams, resetting each at once (CVE-2023-44487); prints
    /// `goaway CODE` for a GOAWAY received and `closed` when the proxy closes the connection.
    static let rapidReset = #"""
        import socket, sys, time
        import h2.connection, h2.config, h2.events, h2.exceptions
        port, count = int(sys.argv[1]), int(sys.argv[2])
        s = socket.create_connection(("127.0.0.1", port))
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        s.sendall(c.data_to_send())
        try:
            for i in range(count):
                sid = c.get_next_available_stream_id()
                c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", "/r%d" % i)], end_stream=True)
                c.reset_stream(sid)
                s.sendall(c.data_to_send())
        except (BrokenPipeError, ConnectionResetError, h2.exceptions.ProtocolError):
            pass
        s.settimeout(10)
        end = time.time() + 10
        while time.time() < end:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                break
            except ConnectionResetError:
                # Closed with the client's flood still unread: the kernel resets instead.
                print("closed", flush=True)
                break
            if not data:
                print("closed", flush=True)
                break
            try:
                events = c.receive_data(data)
            except h2.exceptions.ProtocolError:
                continue
            for e in events:
                if isinstance(e, h2.events.ConnectionTerminated):
                    print("goaway", int(e.error_code), flush=True)
        """#

    /// `PORT COUNT`: a HEADERS frame without END_HEADERS followed by COUNT one-byte CONTINUATION
    /// frames, raw; prints `goaway CODE` and `closed` as the proxy answers.
    static let continuationFlood = #"""
        import socket, struct, sys, time
        port, count = int(sys.argv[1]), int(sys.argv[2])
        def frame(kind, flags, stream, payload):
            return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
        try:
            s.sendall(frame(1, 0, 1, b"\x82"))
            for i in range(count):
                s.sendall(frame(9, 0, 1, b"\x84"))
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(10)
        buffer = b""
        end = time.time() + 10
        while time.time() < end:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                break
            except ConnectionResetError:
                # Closed with the client's flood still unread: the kernel resets instead.
                print("closed", flush=True)
                break
            if not data:
                print("closed", flush=True)
                break
            buffer += data
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[0:3], "big")
                if len(buffer) < 9 + length:
                    break
                kind, payload = buffer[3], buffer[9:9 + length]
                buffer = buffer[9 + length:]
                if kind == 7:
                    print("goaway", int.from_bytes(payload[4:8], "big"), flush=True)
        """#

    /// `PORT JSON`: one stream per entry of the JSON list of header lists, in turn on one
    /// connection, sent unchecked; prints per stream `status CODE BODY` or `reset CODE`.
    static let streams = #"""
        import json, socket, sys, time
        import h2.connection, h2.config, h2.events
        port, blocks = int(sys.argv[1]), json.loads(sys.argv[2])
        s = socket.create_connection(("127.0.0.1", port))
        config = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False, validate_inbound_headers=False)
        c = h2.connection.H2Connection(config)
        c.initiate_connection()
        s.sendall(c.data_to_send())
        s.settimeout(10)
        # The proxy's SETTINGS first, acknowledged: its limits hold from the ACK on (RFC 9113 §6.5.3).
        settled = False
        while not settled:
            data = s.recv(1 << 16)
            if not data:
                sys.exit("closed before SETTINGS")
            settled = any(isinstance(e, h2.events.RemoteSettingsChanged) for e in c.receive_data(data))
            s.sendall(c.data_to_send())
        for block in blocks:
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, [(n, v) for n, v in block], end_stream=True)
            s.sendall(c.data_to_send())
            status, body, done = None, b"", False
            end = time.time() + 10
            while not done and time.time() < end:
                try:
                    data = s.recv(1 << 16)
                except ConnectionResetError:
                    data = b""
                if not data:
                    print("closed", flush=True)
                    sys.exit(0)
                for e in c.receive_data(data):
                    if isinstance(e, h2.events.ResponseReceived) and e.stream_id == sid:
                        status = dict(e.headers)[b":status"].decode()
                    elif isinstance(e, h2.events.DataReceived) and e.stream_id == sid:
                        body += e.data
                        c.acknowledge_received_data(e.flow_controlled_length, sid)
                    elif isinstance(e, h2.events.StreamEnded) and e.stream_id == sid:
                        print("status", status, body.decode().strip(), flush=True)
                        done = True
                    elif isinstance(e, h2.events.StreamReset) and e.stream_id == sid:
                        print("reset", int(e.error_code), flush=True)
                        done = True
                    elif isinstance(e, h2.events.ConnectionTerminated):
                        print("goaway", int(e.error_code), flush=True)
                try:
                    s.sendall(c.data_to_send())
                except (BrokenPipeError, ConnectionResetError):
                    # The proxy closed (a reset: what the client sent was still unread).
                    print("closed", flush=True)
                    sys.exit(0)
        """#

    /// `PORT COUNT`: raw frames: the SETTINGS exchange, then COUNT GET streams at once, ignoring
    /// the proxy's SETTINGS_MAX_CONCURRENT_STREAMS; prints, for three seconds, `answer STREAM`
    /// for a response's HEADERS, `reset STREAM CODE` and `goaway CODE`.
    static let tooManyStreams = #"""
        import socket, struct, sys, time
        port, count = int(sys.argv[1]), int(sys.argv[2])
        def frame(kind, flags, stream, payload):
            return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
        s.settimeout(0.5)
        buffer, settled = b"", False
        def frames():
            global buffer
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[0:3], "big")
                if len(buffer) < 9 + length:
                    return
                kind, flags = buffer[3], buffer[4]
                stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                payload = buffer[9:9 + length]
                buffer = buffer[9 + length:]
                yield kind, flags, stream, payload
        end = time.time() + 10
        while not settled and time.time() < end:
            try:
                buffer += s.recv(1 << 16)
            except socket.timeout:
                continue
            for kind, flags, stream, payload in frames():
                if kind == 4 and not flags & 1:
                    s.sendall(frame(4, 1, 0, b""))
                    settled = True
        # :method GET, :scheme http, :path /, :authority gw
        block = b"\x82\x86\x84\x41\x02gw"
        s.sendall(b"".join(frame(1, 0x05, 1 + 2 * i, block) for i in range(count)))
        end = time.time() + 3
        while time.time() < end:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                continue
            if not data:
                print("closed", flush=True)
                break
            buffer += data
            for kind, flags, stream, payload in frames():
                if kind == 3:
                    print("reset", stream, int.from_bytes(payload[0:4], "big"), flush=True)
                elif kind == 7:
                    print("goaway", int.from_bytes(payload[4:8], "big"), flush=True)
                elif kind == 1:
                    print("answer", stream, flush=True)
        """#
}
