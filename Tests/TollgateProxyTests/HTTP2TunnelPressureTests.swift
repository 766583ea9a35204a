import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgatePolicy
import TollgateTesting

@testable import TollgateProxy

/// An origin that writes `total` bytes to each connection as fast as its socket takes them,
/// counting what the kernel accepted.
private final class FloodHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let total: Int
    let accepted: NIOLockedValueBox<Int>
    private var queued = 0

    init(total: Int, accepted: NIOLockedValueBox<Int>) {
        self.total = total
        self.accepted = accepted
    }

    func channelActive(context: ChannelHandlerContext) {
        pump(context)
        context.fireChannelActive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        pump(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func pump(_ context: ChannelHandlerContext) {
        let chunk = 64 * 1024
        while context.channel.isWritable, queued < total {
            let size = min(chunk, total - queued)
            queued += size
            let accepted = self.accepted
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(repeating: 0x61, count: size))).whenSuccess {
                accepted.withLockedValue { $0 += size }
            }
        }
        if queued >= total { context.close(mode: .output, promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// An origin that resets each connection (SO_LINGER 0, then close: RST instead of FIN) once its
/// first bytes arrived.
private final class ResettingHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private var resetting = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !resetting, let socket = context.channel as? any SocketOptionProvider else { return }
        resetting = true
        let channel = context.channel
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// `PORT AUTHORITY TOTAL STALL`: CONNECT AUTHORITY on an h2c connection; reads the tunnel without
/// opening any window (no WINDOW_UPDATE) for STALL seconds after the first bytes and prints
/// `stalled BYTES`; then opens the windows wide and reads until END_STREAM (30 s at most):
/// `done BYTES ended|open`.
private let stalledTunnel = #"""
    import socket, sys, time
    import h2.connection, h2.config, h2.events
    port, authority, total, stall = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    s = socket.create_connection(("127.0.0.1", port))
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, [(":method", "CONNECT"), (":authority", authority)])
    s.sendall(c.data_to_send())
    state = {"received": 0, "ended": False, "ack": False}
    def pump(timeout):
        s.settimeout(timeout)
        try:
            data = s.recv(1 << 20)
        except socket.timeout:
            return
        if not data:
            raise SystemExit("closed with %d bytes" % state["received"])
        for e in c.receive_data(data):
            if isinstance(e, h2.events.DataReceived):
                state["received"] += len(e.data)
                if state["ack"]:
                    c.acknowledge_received_data(e.flow_controlled_length, 1)
            elif isinstance(e, h2.events.StreamEnded):
                state["ended"] = True
        s.sendall(c.data_to_send())
    first = time.time() + 10
    while state["received"] == 0 and time.time() < first:
        pump(0.1)
    end = time.time() + stall
    while time.time() < end:
        pump(0.1)
    print("stalled", state["received"], flush=True)
    time.sleep(1)
    state["ack"] = True
    c.increment_flow_control_window(1 << 30)
    c.increment_flow_control_window(1 << 30, stream_id=1)
    s.sendall(c.data_to_send())
    end = time.time() + 30
    while not state["ended"] and time.time() < end:
        pump(0.5)
    print("done", state["received"], "ended" if state["ended"] else "open", flush=True)
    """#

@Suite(
    "Back-pressure and failure of CONNECT tunnels on HTTP/2 streams (Python h2)",
    .timeLimit(.minutes(1)),
    .enabled(if: HTTP2Peers.hasPythonH2)
)
struct HTTP2TunnelPressureTests {
    @Test(
        "A client that opens no window stops the proxy reading the origin; once it opens them every byte arrives, then END_STREAM"
    )
    func clientWindowStopsOriginReads() async throws {
        let total = 24 * 1024 * 1024
        let accepted = NIOLockedValueBox(0)
        let origin = try await LoopbackListener.bind(halfClosure: true) {
            FloodHandler(total: total, accepted: accepted)
        }
        defer { origin.close(promise: nil) }
        let port = try #require(origin.localAddress?.port)
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [port]
        try await withProxy(configuration: configuration, h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(
                stalledTunnel,
                ["\(proxy.port)", "127.0.0.1:\(port)", "\(total)", "2"]
            )
            try await eventually(timeout: .seconds(20), "the client stalled") {
                client.outputLine(startingWith: "stalled") != nil
            }
            let whileStalled = accepted.withLockedValue { $0 }
            let stalledLine = client.outputLine(startingWith: "stalled")
            // The client's 64 KiB window, no more, reached it.
            #expect(stalledLine == "stalled 65535", "\(client.standardOutput) \(client.standardError)")
            // The kernel's socket buffers on both sides of the origin's connection hold some MiB;
            // the proxy itself keeps one read (64 KiB). Without back-pressure all 24 MiB go.
            #expect(whileStalled < 16 * 1024 * 1024, "the origin wrote \(whileStalled) bytes")
            _ = try await client.waitForExit(timeout: .seconds(40))
            #expect(
                client.standardOutput.contains("done \(total) ended"),
                "\(client.standardOutput) \(client.standardError)"
            )
            try await eventually("the tunnel in the access log") {
                proxy.accessLog.contains { $0.contains("\"CONNECT 127.0.0.1:\(port) HTTP/2.0\" 200 \(total)") }
            }
        }
    }

    @Test("An origin that resets the connection resets the stream with CONNECT_ERROR; the connection goes on")
    func originResetIsConnectError() async throws {
        let origin = try await LoopbackListener.bind { ResettingHandler() }
        defer { origin.close(promise: nil) }
        let port = try #require(origin.localAddress?.port)
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [port, echo.port]
        try await withProxy(configuration: configuration, h2c: true) { proxy in
            let steps: [[String: Any]] = [
                ["connect": "127.0.0.1:\(port)", "send": ["boom"], "close": false],
                ["connect": "127.0.0.1:\(echo.port)", "send": ["still here "]],
            ]
            let plan = String(decoding: try JSONSerialization.data(withJSONObject: steps), as: UTF8.self)
            let client = try HTTP2Peers.runPython(HTTP2Peers.connectTunnels, ["\(proxy.port)", "-", plan])
            _ = try await client.waitForExit(timeout: .seconds(30))
            let lines = client.standardOutput.split(separator: "\n").map(String.init)
            try #require(lines.count == 2, "\(client.standardOutput) \(client.standardError)")
            #expect(lines[0].hasPrefix("stream 1 status 200 reset 10"), "\(lines[0])")  // CONNECT_ERROR = 0xa
            #expect(lines[1] == "stream 3 status 200 ended data still here bye")
        }
    }
}
