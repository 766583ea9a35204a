import Foundation
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession

@Suite("The origin connection's response decoder")
struct ResponseDecoderTests {
    /// What a decoder made of some bytes, in a form easy to compare.
    struct Outcome: Equatable {
        var heads: [String] = []
        var interims: [String] = []
        var body = ""
        var ends: [Bool] = []
        var failure: String?
    }

    /// Feeds `text` in pieces of `piece` bytes (0: all at once), then, if `close`, ends the input.
    static func decode(_ text: String, piece: Int = 0, head: Bool = false, close: Bool = false) -> Outcome {
        var decoder = ResponseDecoder()
        decoder.requestIsHead = head
        var outcome = Outcome()
        let bytes = Array(text.utf8)
        let step = piece == 0 ? max(bytes.count, 1) : piece
        func record(_ event: ResponseDecoder.Event) {
            switch event {
            case .head(let head):
                let fields = head.headerFields.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
                outcome.heads.append("\(head.version) \(head.status) \(head.reason) [\(fields)]")
            case .interim(let head):
                let fields = head.headerFields.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
                outcome.interims.append("\(head.status) [\(fields)]")
            case .body(let buffer): outcome.body += String(buffer: buffer)
            case .end(let reusable): outcome.ends.append(reusable)
            }
        }
        do {
            for start in stride(from: 0, to: bytes.count, by: step) {
                decoder.feed(ByteBuffer(bytes: bytes[start..<min(start + step, bytes.count)]))
                while let event = try decoder.next() { record(event) }
            }
            if close, let event = try decoder.inputEnded() { record(event) }
        } catch {
            outcome.failure = error.message
        }
        return outcome
    }

    /// The same outcome whether the bytes come at once or one by one.
    static func decodeBothWays(_ text: String, head: Bool = false, close: Bool = false) -> Outcome {
        let whole = decode(text, head: head, close: close)
        let bytewise = decode(text, piece: 1, head: head, close: close)
        #expect(whole == bytewise, "fed whole vs byte by byte")
        return whole
    }

    @Test("A Content-Length body, then the next response on the same bytes")
    func lengthBody() {
        let outcome = Self.decodeBothWays(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  spaced  \r\n\r\nhello"
                + "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(outcome.heads == ["HTTP/1.1 200 OK [Content-Length=5,X-A=spaced]", "HTTP/1.1 404 Not Found [Content-Length=0]"])
        #expect(outcome.body == "hello")
        #expect(outcome.ends == [true, true])
    }

    @Test("A chunked body with extensions and trailers")
    func chunked() {
        let outcome = Self.decodeBothWays(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n6 \r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
        )
        #expect(outcome.body == "hello world")
        #expect(outcome.ends == [true])
        #expect(outcome.failure == nil)
    }

    @Test("Without framing the body runs to the close, and the connection is not reused")
    func untilClose() {
        let outcome = Self.decodeBothWays("HTTP/1.1 200 OK\r\nX: y\r\n\r\nsome bytes", close: true)
        #expect(outcome.body == "some bytes")
        #expect(outcome.ends == [false])
        // A Transfer-Encoding that does not end in chunked also runs to the close.
        let coded = Self.decodeBothWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz", close: true)
        #expect(coded.body == "zz")
        #expect(coded.ends == [false])
    }

    @Test("No body after HEAD, or for 204 and 304, whatever the fields say")
    func noBody() {
        let head = Self.decodeBothWays("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", head: true)
        #expect(head.ends == [true])
        #expect(head.body.isEmpty)
        for status in ["204 No Content", "304 Not Modified"] {
            let outcome = Self.decodeBothWays("HTTP/1.1 \(status)\r\nContent-Length: 10\r\n\r\n")
            #expect(outcome.ends == [true])
            #expect(outcome.body.isEmpty)
        }
    }

    @Test("Interim responses are handed on apart, in order; the final head carries none of their fields")
    func interim() {
        let outcome = Self.decodeBothWays(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                + "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        )
        #expect(outcome.interims == ["100 []", "103 [Link=</a>]", "102 []"])
        #expect(outcome.heads == ["HTTP/1.1 200 OK [Content-Length=2]"])
        #expect(outcome.body == "ok")
    }

    @Test("After a 101 the decoder stops and keeps the new protocol's bytes")
    func upgrade() throws {
        var decoder = ResponseDecoder()
        decoder.feed(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\u{81}\u{2}hi"))
        guard case .head(let head) = try decoder.next() else { Issue.record("no head"); return }
        #expect(head.status == 101)
        guard case .end(let reusable) = try decoder.next() else { Issue.record("no end"); return }
        #expect(!reusable)
        #expect(try decoder.next() == nil)
        #expect(Array(decoder.takeRemainingBytes().readableBytesView) == Array("\u{81}\u{2}hi".utf8))
    }

    @Test("Lenient where RFC 9112 allows: bare LF, obs-fold, space before the colon, no reason")
    func lenient() {
        let outcome = Self.decodeBothWays(
            "HTTP/1.1 200\nX-Folded: one\n  two\nX-Space : v\nContent-Length: 1\n\nz"
        )
        #expect(outcome.heads == ["HTTP/1.1 200  [X-Folded=one two,X-Space=v,Content-Length=1]"])
        #expect(outcome.body == "z")
    }

    @Test("A value's obs-text bytes (not UTF-8) are kept as received, to be forwarded unchanged")
    func obsTextKept() throws {
        var decoder = ResponseDecoder()
        let head: [UInt8] = Array("HTTP/1.1 200 OK\r\nX-Latin: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        decoder.feed(ByteBuffer(bytes: head))
        guard case .head(let response) = try decoder.next() else {
            Issue.record("no head")
            return
        }
        let fields = response.headerFields
        let wire = [UInt8](unsafeUninitializedCapacity: fields.wireSize) { buffer, count in
            count = fields.writeWire(to: UnsafeMutableRawBufferPointer(buffer))
        }
        #expect(wire == Array("X-Latin: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n".utf8))
    }

    @Test("Keep-alive from the version and Connection")
    func keepAlive() {
        #expect(Self.decode("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").ends == [false])
        #expect(Self.decode("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").ends == [false])
        #expect(Self.decode("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n").ends == [true])
        // Both framings: read as chunked, but the connection carries nothing more.
        let both = Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
        #expect(both.body == "a")
        #expect(both.ends == [false])
    }

    @Test(
        "Refused: what has no one reading",
        arguments: [
            ("HTTP/2 200 OK\r\n\r\n", "invalid status line"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "invalid status line"),
            ("ICY 200 OK\r\n\r\n", "invalid status line"),
            ("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", "NUL"),
            ("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare CR"),
            ("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", "invalid Content-Length"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", "invalid Content-Length"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc", "chunk data"),
            ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "without a colon"),
            ("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "invalid field name"),
            ("HTTP/1.1 200 OK\r\n: x\r\n\r\n", "invalid field name \"\""),
            ("HTTP/1.1 200 OK\r\nX(y): z\r\n\r\n", "invalid field name \"X(y)\""),
            ("HTTP/1.1 200 OK\r\nName\t x\r\n\r\n", "without a colon"),
        ]
    )
    func refused(text: String, expected: String) {
        let whole = Self.decode(text)
        let bytewise = Self.decode(text, piece: 1)
        #expect(whole.failure?.contains(expected) == true, "\(whole.failure ?? "no failure")")
        #expect(bytewise.failure?.contains(expected) == true, "\(bytewise.failure ?? "no failure")")
    }

    @Test("A list of equal Content-Length values is one length")
    func equalLengths() {
        let outcome = Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nab")
        #expect(outcome.body == "ab")
        #expect(outcome.ends == [true])
    }

    @Test("A head larger than the limit is refused before it ends")
    func headTooLarge() {
        let filler = String(repeating: "X-Filler: \(String(repeating: "a", count: 100))\r\n", count: 2000)
        let outcome = Self.decode("HTTP/1.1 200 OK\r\n" + filler, piece: 4096)
        #expect(outcome.failure?.contains("larger than") == true)
    }

    @Test("The connection closing inside a message is a failure; between messages it is not")
    func closedInside() {
        let body = Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", close: true)
        #expect(body.body == "abc")
        #expect(body.failure?.contains("closed before the response was complete") == true)
        let head = Self.decode("HTTP/1.1 200 OK\r\nContent-Le", close: true)
        #expect(head.failure != nil)
        let between = Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", close: true)
        #expect(between.failure == nil)
        #expect(between.ends == [true])
    }
}

@Suite("The origin connection's request head encoder")
struct RequestHeadEncoderTests {
    static func encode(
        _ head: HTTPRequestHead,
        length: Int64? = nil,
        body: Bool = false,
        viaProxy: Bool = false
    ) -> (String, RequestHeadEncoder) {
        let encoder = RequestHeadEncoder(
            head: head, bodyLength: length, hasBody: body, viaProxy: viaProxy, allocator: ByteBufferAllocator()
        )
        return (String(buffer: encoder.bytes), encoder)
    }

    @Test("Host first when missing; origin-form, or absolute-form through a proxy")
    func target() throws {
        let url = try HTTPURL.parse("http://example.test:8080/a?b=1")
        let (text, encoder) = Self.encode(HTTPRequestHead(method: .get, url: url, headerFields: ["Accept": "*/*"]))
        #expect(text == "GET /a?b=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n\r\n")
        #expect(encoder.framing == .plain)
        #expect(encoder.keepAlive)
        #expect(!encoder.isHead)
        let (proxied, _) = Self.encode(HTTPRequestHead(method: .head, url: url, headerFields: ["Host": "h"]), viaProxy: true)
        #expect(proxied == "HEAD http://example.test:8080/a?b=1 HTTP/1.1\r\nHost: h\r\n\r\n")
        // The Host line is written from the URL's parts: the default port left out, an IPv6
        // literal in brackets.
        let (plain, _) = Self.encode(HTTPRequestHead(method: .get, url: try HTTPURL.parse("https://example.test:443/")))
        #expect(plain == "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n")
        let (literal, _) = Self.encode(HTTPRequestHead(method: .get, url: try HTTPURL.parse("http://[::1]:65535/x")))
        #expect(literal == "GET /x HTTP/1.1\r\nHost: [::1]:65535\r\n\r\n")
    }

    @Test("Framing: a known length, chunked when unknown, an explicit zero for a POST without a body")
    func framing() throws {
        let url = try HTTPURL.parse("http://h/")
        let (known, knownEncoder) = Self.encode(HTTPRequestHead(method: .post, url: url, headerFields: ["Host": "h"]), length: 3, body: true)
        #expect(known.hasSuffix("Host: h\r\nContent-Length: 3\r\n\r\n"))
        #expect(knownEncoder.framing == .plain)
        let (streamed, streamedEncoder) = Self.encode(HTTPRequestHead(method: .put, url: url, headerFields: ["Host": "h"]), body: true)
        #expect(streamed.hasSuffix("Transfer-Encoding: chunked\r\n\r\n"))
        #expect(streamedEncoder.framing == .chunked)
        let (empty, _) = Self.encode(HTTPRequestHead(method: .post, url: url, headerFields: ["Host": "h"]))
        #expect(empty.hasSuffix("Content-Length: 0\r\n\r\n"))
        let (own, ownEncoder) = Self.encode(
            HTTPRequestHead(method: .post, url: url, headerFields: ["Host": "h", "Transfer-Encoding": "chunked"]),
            body: true
        )
        #expect(own.components(separatedBy: "Transfer-Encoding").count == 2)
        #expect(ownEncoder.framing == .chunked)
    }

    @Test("Connection: close means the connection is not reused")
    func close() throws {
        let url = try HTTPURL.parse("http://h/")
        let (_, encoder) = Self.encode(HTTPRequestHead(method: .get, url: url, headerFields: ["Connection": "Close"]))
        #expect(!encoder.keepAlive)
    }
}
