import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession

@testable import TollgateProxy

/// An ``HTTP2StreamHandler`` on an `EmbeddedChannel` standing in for one stream's channel, with
/// scripted exchanges: frames in, frames out.
private final class EmbeddedStream {
    let channel = EmbeddedChannel()
    let reads = ReadCounter()
    private(set) var exchanges: [ScriptedExchange] = []
    var onStart: ((ScriptedExchange) -> Void)?
    private let session: Session

    init(
        mode: ListenerMode = .reverse(upstream: HTTPURL(string: "http://127.0.0.1:9")!),
        limits: PolicyConfiguration.Limits = PolicyConfiguration.Limits()
    ) throws {
        var configuration = PolicyConfiguration()
        configuration.limits = limits
        let policy = StaticProxyPolicy(configuration: configuration)
        session = policy.session
        let environment = ListenerEnvironment(
            mode: mode,
            policy: policy,
            accessLog: .off,
            metrics: ProxyMetrics(),
            ownListeners: OwnListeners(),
            authenticators: try AuthenticatorCache(policy: policy),
            resolver: AddressResolver()
        )
        let connection = HTTP2FrontConnection(
            environment: environment,
            remoteAddress: try SocketAddress(ipAddress: "127.0.0.1", port: 40000),
            pipeline: channel.pipeline.syncOperations
        )
        let handler = HTTP2StreamHandler(connection: connection) { [unowned self] head, _, responder, _ in
            let exchange = ScriptedExchange(head: head, responder: responder)
            exchange.onStart = onStart
            exchanges.append(exchange)
            return exchange
        }
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
    }

    deinit { session.invalidateAndCancel() }

    func send(_ payload: HTTP2Frame.FramePayload) throws {
        try channel.writeInbound(payload)
        channel.embeddedEventLoop.run()
    }

    func headers(_ fields: [(String, String)], endStream: Bool) throws {
        try send(.headers(.init(headers: HPACKHeaders(fields), endStream: endStream)))
    }

    /// The frames written so far, as short descriptions.
    func written() throws -> [String] {
        channel.embeddedEventLoop.run()
        var frames: [String] = []
        while let payload = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) {
            switch payload {
            case .headers(let headers):
                let fields = headers.headers.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
                frames.append("HEADERS \(fields)\(headers.endStream ? " END_STREAM" : "")")
            case .data(let data):
                guard case .byteBuffer(let buffer) = data.data else { continue }
                frames.append("DATA \(String(buffer: buffer))\(data.endStream ? " END_STREAM" : "")")
            case .rstStream(let code):
                frames.append("RST_STREAM \(code)")
            default:
                frames.append("other")
            }
        }
        return frames
    }
}

@Suite("The HTTP/2 stream handler on an EmbeddedChannel")
struct HTTP2StreamHandlerTests {
    private let get = [(":method", "GET"), (":scheme", "http"), (":authority", "gw"), (":path", "/x")]

    @Test("A request's answer goes out as HEADERS, DATA and an empty DATA with END_STREAM")
    func answer() throws {
        let stream = try EmbeddedStream()
        stream.onStart = { $0.answer("hello") }
        try stream.headers(get, endStream: true)
        #expect(stream.exchanges.first?.head.target == "/x")
        #expect(stream.exchanges.first?.head.versionText == "HTTP/2.0")
        #expect(
            try stream.written() == [
                "HEADERS :status=200 content-length=5", "DATA hello", "DATA  END_STREAM",
            ]
        )
    }

    @Test("A malformed block is reset with PROTOCOL_ERROR and starts no exchange")
    func malformed() throws {
        let stream = try EmbeddedStream()
        try stream.headers([(":method", "GET"), (":scheme", "http"), (":authority", "gw")], endStream: true)
        #expect(stream.exchanges.isEmpty)
        #expect(try stream.written() == ["RST_STREAM \(HTTP2ErrorCode.protocolError)"])
        #expect(!stream.channel.isActive)
    }

    @Test("Held reads are not passed on until released; the body and its end reach the exchange")
    func readHolding() throws {
        let stream = try EmbeddedStream()
        stream.onStart = { $0.responder.holdReads() }
        try stream.headers(
            [(":method", "POST"), (":scheme", "http"), (":authority", "gw"), (":path", "/p")],
            endStream: false
        )
        let before = stream.reads.reads
        stream.channel.read()
        #expect(stream.reads.reads == before, "a read went through while the exchange held reads")
        let exchange = try #require(stream.exchanges.first)
        exchange.responder.releaseReads()
        #expect(stream.reads.reads == before + 1)
        try stream.send(.data(.init(data: .byteBuffer(ByteBuffer(string: "abc")), endStream: true)))
        #expect(exchange.bodyBytes == 3)
        #expect(exchange.requestEnded)
    }

    @Test("An answer before the request body ended asks the client to stop with RST_STREAM(NO_ERROR)")
    func earlyAnswer() throws {
        let stream = try EmbeddedStream()
        stream.onStart = { $0.answer("early") }
        try stream.headers(
            [(":method", "POST"), (":scheme", "http"), (":authority", "gw"), (":path", "/p")],
            endStream: false
        )
        #expect(try stream.written().last == "RST_STREAM \(HTTP2ErrorCode.noError)")
    }

    @Test("An aborted response is reset with INTERNAL_ERROR, never ended as whole")
    func abort() throws {
        let stream = try EmbeddedStream()
        stream.onStart = { exchange in
            var added = exchange.responder.takeAddedFields()
            exchange.responder.sendHead(
                HTTPResponseHead(status: 200, headerFields: ["Content-Length": "10"]),
                adding: &added,
                framing: .contentLength,
                bodyLength: 10,
                close: false
            )
            exchange.responder.sendBody(ByteBuffer(string: "part"))
            exchange.responder.abort()
        }
        try stream.headers(get, endStream: true)
        #expect(
            try stream.written() == [
                "HEADERS :status=200 content-length=10", "DATA part", "RST_STREAM \(HTTP2ErrorCode.internalError)",
            ]
        )
    }

    @Test("A client gone while serving is told to the exchange")
    func clientGone() throws {
        let stream = try EmbeddedStream()
        try stream.headers(get, endStream: true)
        _ = try stream.channel.close().wait()
        #expect(stream.exchanges.first?.sawClientClose == true)
    }

    @Test("A client that stops sending its body gets 408 after client-idle-timeout; a held stream does not")
    func bodyIdleTimeout() throws {
        var limits = PolicyConfiguration.Limits()
        limits.clientIdleTimeout = .seconds(5)
        let stream = try EmbeddedStream(limits: limits)
        let post = [(":method", "POST"), (":scheme", "http"), (":authority", "gw"), (":path", "/p")]
        try stream.headers(post, endStream: false)
        let exchange = try #require(stream.exchanges.first)
        exchange.responder.holdReads()
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(exchange.failure == nil, "timed out while the proxy held the reads")
        exchange.responder.releaseReads()
        try stream.send(.data(.init(data: .byteBuffer(ByteBuffer(string: "ab")))))
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(exchange.failure == nil)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(exchange.failure?.status == 408)
        let frames = try stream.written()
        #expect(frames.first?.hasPrefix("HEADERS :status=408") == true, "\(frames)")
        #expect(frames.last == "RST_STREAM \(HTTP2ErrorCode.noError)")
    }

    @Test("A stream that cannot be written to for client-send-timeout is reset with CANCEL, its exchange told it timed out and that the client left; one that drains in time starts the count again")
    func sendTimeout() throws {
        var limits = PolicyConfiguration.Limits()
        limits.clientSendTimeout = .seconds(60)
        let stream = try EmbeddedStream(limits: limits)
        try stream.headers([(":method", "GET"), (":scheme", "http"), (":authority", "gw"), (":path", "/large")], endStream: true)
        let exchange = try #require(stream.exchanges.first)
        func writable(_ writable: Bool) {
            stream.channel.isWritable = writable
            stream.channel.pipeline.fireChannelWritabilityChanged()
        }
        writable(false)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        writable(true)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        writable(false)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(!exchange.sawSendTimeout && !exchange.sawClientClose)
        stream.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(exchange.sawSendTimeout && exchange.sawClientClose)
        #expect(try stream.written().last == "RST_STREAM \(HTTP2ErrorCode.cancel)")
        #expect(!stream.channel.isActive)
    }
}
