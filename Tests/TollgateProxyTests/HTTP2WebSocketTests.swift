import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTesting

@testable import TollgateProxy

/// `PORT AUTHORITY PATH MESSAGE...`: an h2c client that waits for the proxy's
/// SETTINGS_ENABLE_CONNECT_PROTOCOL, opens a WebSocket with an extended CONNECT (RFC 8441,
/// `:protocol websocket`, `:scheme http`), sends each MESSAGE as a masked text frame and reads
/// the echo, then sends a close frame (1000) and reads the server's. Prints `settings
/// enable_connect_protocol N`, `status S`, `reply TEXT` per message, `closed CODE`, and `ended`
/// when the stream ended.
private let webSocketOverH2 = #"""
    import os, socket, struct, sys, time
    import h2.connection, h2.config, h2.events, h2.settings
    port, authority, path, messages = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
    s = socket.create_connection(("127.0.0.1", port))
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False))
    c.initiate_connection()
    s.sendall(c.data_to_send())
    s.settimeout(0.2)
    state = {"settings": None, "status": None, "buffer": b"", "ended": False}
    def frame(opcode, payload):
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked
    def pump():
        try:
            data = s.recv(1 << 16)
        except socket.timeout:
            return
        if not data:
            raise SystemExit("closed")
        for e in c.receive_data(data):
            if isinstance(e, h2.events.RemoteSettingsChanged):
                setting = e.changed_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL)
                if setting is not None:
                    state["settings"] = setting.new_value
            elif isinstance(e, h2.events.ResponseReceived):
                state["status"] = dict(e.headers)[b":status"].decode()
            elif isinstance(e, h2.events.DataReceived):
                state["buffer"] += e.data
                c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                state["ended"] = True
        s.sendall(c.data_to_send())
    def next_frame(deadline):
        while time.time() < deadline:
            b = state["buffer"]
            if len(b) >= 2 and len(b) >= 2 + (b[1] & 0x7F):
                size = b[1] & 0x7F
                opcode, payload = b[0] & 0x0F, b[2:2 + size]
                state["buffer"] = b[2 + size:]
                return opcode, payload
            pump()
        raise SystemExit("no frame")
    end = time.time() + 10
    while state["settings"] is None and time.time() < end:
        pump()
    print("settings enable_connect_protocol", state["settings"], flush=True)
    c.send_headers(1, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"), (":authority", authority), (":path", path), ("sec-websocket-version", "13")])
    s.sendall(c.data_to_send())
    end = time.time() + 10
    while state["status"] is None and time.time() < end:
        pump()
    print("status", state["status"], flush=True)
    if state["status"] != "200":
        sys.exit(0)
    for message in messages:
        c.send_data(1, frame(1, message.encode()))
        s.sendall(c.data_to_send())
        opcode, payload = next_frame(time.time() + 10)
        print("reply", payload.decode(), flush=True)
    c.send_data(1, frame(8, struct.pack("!H", 1000)))
    s.sendall(c.data_to_send())
    opcode, payload = next_frame(time.time() + 10)
    print("closed", struct.unpack("!H", payload[:2])[0] if opcode == 8 else "opcode %d" % opcode, flush=True)
    c.end_stream(1)
    s.sendall(c.data_to_send())
    end = time.time() + 10
    while not state["ended"] and time.time() < end:
        pump()
    if state["ended"]:
        print("ended", flush=True)
    """#

@Suite(
    "WebSocket over HTTP/2 (RFC 8441 extended CONNECT) to an HTTP/1.1 websockets origin",
    .timeLimit(.minutes(1)),
    .enabled(if: HTTP2Peers.hasPythonH2 && WebSocketPeer.python != nil)
)
struct HTTP2WebSocketTests {
    @Test(
        "An extended CONNECT becomes the origin's WebSocket upgrade: 200 on the stream, frames both ways, the close, END_STREAM; logged"
    )
    func echoThroughAStream() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        try await withProxy(logFormat: .json, h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(
                webSocketOverH2,
                ["\(proxy.port)", "127.0.0.1:\(server.port)", "/echo", "hello", "over h2"]
            )
            _ = try await client.waitForExit(timeout: .seconds(30))
            #expect(
                client.standardOutput
                    == "settings enable_connect_protocol 1\nstatus 200\nreply hello\nreply over h2\nclosed 1000\nended\n",
                "\(client.standardOutput) \(client.standardError)"
            )
            try await eventually("the server saw the close") { server.closes == ["closed 1000 "] }
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let line = try #require(proxy.accessLog.first)
            #expect(line.contains("\"version\":\"HTTP/2.0\""), "\(line)")
            // Two messages each way (the close frames are counted as the close, not as messages).
            #expect(
                line.contains("\"messages_to_upstream\":2,\"bytes_to_upstream\":12,\"messages_to_client\":2"),
                "\(line)"
            )
            #expect(line.contains("\"close_code\":1000,\"closed_by\":\"client\""), "\(line)")
        }
    }

    @Test("An origin that refuses the upgrade (403) refuses the extended CONNECT with its answer")
    func refusedUpgrade() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        try await withProxy(h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(
                webSocketOverH2,
                ["\(proxy.port)", "127.0.0.1:\(server.port)", "/refuse"]
            )
            _ = try await client.waitForExit(timeout: .seconds(30))
            #expect(
                client.standardOutput == "settings enable_connect_protocol 1\nstatus 403\n",
                "\(client.standardOutput) \(client.standardError)"
            )
        }
    }
}
