import Foundation
import NIOCore
import NIOHPACK
import Testing
import TollgateHTTP

@testable import TollgateProxy

@Suite("HTTP/2 header blocks to requests and responses to header blocks (RFC 9113 §8)")
struct HTTP2RequestMappingTests {
    private func map(
        _ fields: [(String, String)],
        endStream: Bool = true,
        absolute: Bool = false
    ) throws(HTTP2RequestMapping.Malformed) -> HTTP2RequestMapping.Mapped {
        try HTTP2RequestMapping.map(
            fields.map { (name: $0.0, value: $0.1) },
            endStream: endStream,
            absoluteTarget: absolute
        )
    }

    private func requestHead(_ mapped: HTTP2RequestMapping.Mapped) -> ClientRequestHead? {
        if case .request(let head) = mapped { head } else { nil }
    }

    @Test("Pseudo-header fields become method, origin-form target and Host; the version logged is HTTP/2.0")
    func originForm() throws {
        let mapped = try map([
            (":method", "GET"), (":scheme", "http"), (":authority", "gw.example"), (":path", "/a?b=c"),
            ("accept", "*/*"), ("host", "ignored.example"),
        ])
        let head = try #require(requestHead(mapped))
        #expect(head.method == "GET")
        #expect(head.target == "/a?b=c")
        #expect(head.headerFields.values(for: "Host") == ["gw.example"])
        #expect(head.headerFields["Accept"] == "*/*")
        #expect(head.framing == .none)
        #expect(head.versionText == "HTTP/2.0")
        #expect(head.isHTTP2)
    }

    @Test("A forward listener gets the absolute target from :scheme, :authority and :path")
    func absoluteForm() throws {
        let mapped = try map(
            [(":method", "GET"), (":scheme", "http"), (":authority", "origin.example:8080"), (":path", "/x")],
            absolute: true
        )
        #expect(requestHead(mapped)?.target == "http://origin.example:8080/x")
    }

    @Test("A body is framed by content-length, else by the stream's end; cookies are joined into one field")
    func framingAndCookies() throws {
        let base = [(":method", "POST"), (":scheme", "http"), (":authority", "a"), (":path", "/")]
        #expect(requestHead(try map(base + [("content-length", "4")], endStream: false))?.framing == .length(4))
        #expect(requestHead(try map(base, endStream: false))?.framing == .chunked)
        let cookies = try #require(requestHead(try map(base + [("cookie", "a=1"), ("cookie", "b=2")])))
        #expect(cookies.headerFields.values(for: "Cookie") == ["a=1; b=2"])
    }

    @Test(
        "Malformed blocks are refused (PROTOCOL_ERROR)",
        arguments: [
            [(":method", "GET"), (":scheme", "http"), (":authority", "a")],  // no :path
            [(":method", "GET"), (":scheme", "http"), (":authority", "a"), (":path", "")],  // empty :path
            [(":scheme", "http"), (":authority", "a"), (":path", "/")],  // no :method
            [(":method", "GET"), (":authority", "a"), (":path", "/")],  // no :scheme
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("Accept", "x")],  // uppercase name
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("connection", "keep-alive")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("transfer-encoding", "chunked")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("upgrade", "websocket")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("keep-alive", "5")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("proxy-connection", "close")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("te", "gzip")],
            [(":method", "GET"), (":scheme", "http"), ("accept", "x"), (":path", "/")],  // pseudo after regular
            [(":method", "GET"), (":method", "GET"), (":scheme", "http"), (":path", "/")],  // twice
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":status", "200")],  // a response's
            [(":method", "GET"), (":scheme", "http"), (":path", "x")],  // not origin-form
            [(":method", "POST"), (":scheme", "http"), (":path", "/"), ("content-length", "x")],
            // Pseudo-header values that would split the HTTP/1.1 request sent upstream.
            [(":method", "GET"), (":scheme", "http"), (":authority", "a"), (":path", "/a HTTP/1.1\r\nX: y")],
            [(":method", "GET"), (":scheme", "http"), (":authority", "a"), (":path", "/a b")],
            [(":method", "GET"), (":scheme", "http"), (":authority", "a"), (":path", "/a\u{0}")],
            [
                (":method", "GET / HTTP/1.1\r\nHost: b\r\n\r\nGET"), (":scheme", "http"), (":authority", "a"),
                (":path", "/"),
            ],
            [(":method", "GE T"), (":scheme", "http"), (":authority", "a"), (":path", "/")],
            [(":method", "GET"), (":scheme", "http"), (":authority", "a\r\nX-Injected: 1"), (":path", "/")],
            [(":method", "GET"), (":scheme", "http"), (":authority", "user@a"), (":path", "/")],  // userinfo
            [(":method", "GET"), (":scheme", "http"), (":authority", "a/b"), (":path", "/")],
            [(":method", "GET"), (":scheme", "ht tp"), (":authority", "a"), (":path", "/")],
            [(":method", "GET"), (":scheme", "1http"), (":authority", "a"), (":path", "/")],
        ]
    )
    func malformed(fields: [(String, String)]) {
        #expect(throws: HTTP2RequestMapping.Malformed.self) { try map(fields) }
    }

    @Test("te: trailers is the one TE allowed")
    func teTrailers() throws {
        #expect(
            requestHead(
                try map([
                    (":method", "GET"), (":scheme", "http"), (":authority", "a"), (":path", "/"), ("te", "trailers"),
                ])
            ) != nil
        )
    }

    @Test("A CONNECT maps to a request for its :authority (RFC 9113 §8.5); one with :scheme or :path is malformed")
    func connectMapped() throws {
        guard
            case .request(let head) = try map([
                (":method", "CONNECT"), (":authority", "example.com:443"), ("user-agent", "t"),
            ])
        else {
            Issue.record("not a request")
            return
        }
        #expect(head.method == "CONNECT")
        #expect(head.target == "example.com:443")
        #expect(head.headerFields[.host] == "example.com:443")
        #expect(head.headerFields[.userAgent] == "t")
        #expect(head.versionText == "HTTP/2.0")
        #expect(throws: HTTP2RequestMapping.Malformed.self) {
            try map([(":method", "CONNECT"), (":authority", "a:443"), (":path", "/")])
        }
        #expect(throws: HTTP2RequestMapping.Malformed.self) {
            try map([(":method", "CONNECT"), (":authority", "a:443"), (":scheme", "https")])
        }
        #expect(throws: HTTP2RequestMapping.Malformed.self) { try map([(":method", "CONNECT")]) }
    }

    @Test(
        "An extended CONNECT (RFC 8441) :protocol websocket maps to the HTTP/1.1 upgrade it stands for; another protocol gets 501"
    )
    func extendedConnect() throws {
        let fields = [
            (":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"), (":authority", "a.test"),
            (":path", "/chat"),
            ("sec-websocket-version", "13"),
        ]
        guard case .request(let head) = try map(fields) else {
            Issue.record("not a request")
            return
        }
        #expect(head.method == "GET")
        #expect(head.target == "/chat")
        #expect(head.isUpgrade)
        #expect(head.headerFields[.upgrade] == "websocket")
        #expect(head.headerFields["sec-websocket-version"] == "13")
        #expect(Data(base64Encoded: head.headerFields["sec-websocket-key"] ?? "")?.count == 16)
        #expect(head.framing == .none)  // the stream's DATA is the WebSocket's
        var other = fields
        other[1] = (":protocol", "connect-udp")
        guard case .refuse(let answer) = try map(other) else {
            Issue.record("not refused")
            return
        }
        #expect(answer.status == 501)
        #expect(throws: HTTP2RequestMapping.Malformed.self) {
            try map([
                (":method", "GET"), (":protocol", "websocket"), (":scheme", "http"), (":authority", "a"),
                (":path", "/"),
            ])
        }
    }

    @Test("A response block has :status first, lowercase names, and no connection-specific fields")
    func responseBlock() {
        let head = HTTPResponseHead(
            status: 200,
            headerFields: [
                "Content-Type": "text/plain", "Connection": "close, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5",
                "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Proxy-Connection": "close", "ETag": "\"1\"",
            ]
        )
        let block = HTTP2ResponseFields.block(head, adding: ["Via": "1.1 tollgate", "Transfer-Encoding": "chunked"])
        #expect(block.map { $0.name } == [":status", "content-type", "etag", "via"])
        #expect(block.first(name: ":status") == "200")
    }

    @Test("The first bytes decide: the whole preface is HTTP/2, a differing byte is HTTP/1.1, a prefix waits")
    func preface() {
        #expect(HTTP2Preface.classify(ByteBuffer(bytes: HTTP2Preface.bytes + [0, 0])) == .http2)
        #expect(HTTP2Preface.classify(ByteBuffer(string: "PRI * HTTP/2")) == .undecided)
        #expect(HTTP2Preface.classify(ByteBuffer(string: "GET / HTTP/1.1\r\n")) == .other)
        #expect(HTTP2Preface.classify(ByteBuffer(string: "PRI * HTTP/1.1\r\n")) == .other)
        #expect(HTTP2Preface.classify(ByteBuffer()) == .undecided)
    }
}
