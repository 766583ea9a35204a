import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateProxy

/// Feeds `text` to a decoder (in pieces of `pieceSize` bytes, or whole) and collects its events.
private func decode(
    _ text: String,
    pieceSize: Int? = nil,
    limits: RequestDecoder.Limits = .init(maxHeaderBytes: 64 * 1024, maxHeaders: 100)
) -> (events: [String], decoder: RequestDecoder) {
    var decoder = RequestDecoder(limits: limits)
    var events: [String] = []
    let bytes = Array(text.utf8)
    let size = pieceSize ?? max(1, bytes.count)
    var offset = 0
    repeat {
        let end = min(bytes.count, offset + size)
        decoder.feed(ByteBuffer(bytes: bytes[offset..<end]))
        offset = end
        while let event = decoder.next() {
            switch event {
            case .head(let head): events.append("head \(head.method) \(head.target) \(head.framing)")
            case .body(let buffer): events.append("body \(String(buffer: buffer))")
            case .end: events.append("end")
            case .failure(let error): events.append("failure \(error.status)")
            }
        }
    } while offset < bytes.count
    return (events, decoder)
}

/// Body pieces joined, so that tests do not depend on how the bytes were split.
private func joined(_ events: [String]) -> [String] {
    var result: [String] = []
    for event in events {
        if event.hasPrefix("body "), let last = result.last, last.hasPrefix("body ") {
            result[result.count - 1] = last + event.dropFirst(5)
        } else {
            result.append(event)
        }
    }
    return result
}

@Suite("Request decoder: what is accepted", .timeLimit(.minutes(1)))
struct RequestDecoderAcceptTests {
    @Test("A request with a Content-Length body, then a pipelined one, whole or byte by byte", arguments: [nil, 1, 7])
    func lengthBodyAndPipelining(pieceSize: Int?) {
        let (events, _) = decode(
            "POST http://a/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET http://a/y HTTP/1.1\r\nHost: a\r\n\r\n",
            pieceSize: pieceSize
        )
        #expect(
            joined(events) == [
                "head POST http://a/x length(5)", "body hello", "end", "head GET http://a/y none", "end",
            ]
        )
    }

    @Test("A chunked body with extensions and trailers, whole or byte by byte", arguments: [nil, 1, 3])
    func chunkedBody(pieceSize: Int?) {
        let (events, _) = decode(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
            pieceSize: pieceSize
        )
        #expect(joined(events) == ["head POST / chunked", "body hello world", "end"])
    }

    @Test("Identical duplicate Content-Length values are one length; empty lines before a request are skipped")
    func duplicateIdenticalLengths() {
        let (events, _) = decode(
            "\r\n\r\nPUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc"
        )
        #expect(events == ["head PUT / length(3)", "body abc", "end"])
    }

    @Test("HTTP/1.0 needs no Host; the head's fields keep their order and values")
    func http10() {
        var decoder = RequestDecoder(limits: .init(maxHeaderBytes: 1024, maxHeaders: 10))
        decoder.feed(ByteBuffer(string: "GET http://a/ HTTP/1.0\r\nB: 2\r\nA:  1 \r\nB: 3\r\n\r\n"))
        guard case .head(let head) = decoder.next() else {
            Issue.record("no head")
            return
        }
        #expect(head.minorVersion == 0)
        #expect(head.headerFields.pairs.map { "\($0.0)=\($0.1)" } == ["B=2", "A=1", "B=3"])
        #expect(!head.wantsKeepAlive)
    }

    @Test("After CONNECT the decoder stops and keeps the bytes that follow for the tunnel")
    func connectStops() {
        var (events, decoder) = decode("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n\u{16}\u{03}\u{01}hello")
        #expect(events == ["head CONNECT a:443 none", "end"])
        #expect(decoder.isStopped)
        #expect(String(buffer: decoder.takeRawBytes()) == "\u{16}\u{03}\u{01}hello")
    }

    @Test("After an upgrade request the decoder stops: what follows is the new protocol")
    func upgradeStops() {
        let (events, decoder) = decode(
            "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /not-a-request HTTP/1.1\r\n\r\n"
        )
        #expect(events == ["head GET /ws none", "end"])
        #expect(decoder.isStopped)
        #expect(decoder.bufferedBytes > 0)
    }
}

@Suite("Request decoder: smuggling and limits are refused", .timeLimit(.minutes(1)))
struct RequestDecoderRefuseTests {
    static let refusedWith400: [(String, String)] = [
        (
            "both Content-Length and Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        (
            "differing duplicate Content-Length",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"
        ),
        ("differing Content-Length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\nhello!"),
        ("signed Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello"),
        (
            "a coding after chunked",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"
        ),
        ("a coding other than chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
        (
            "chunked twice",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        ("Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        (
            "a chunk size that is not hex",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
        ),
        ("a negative chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n"),
        (
            "a 0x chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "an overflowing chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000000\r\n"
        ),
        (
            "chunk data without CRLF",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
        ),
        ("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  folded\r\n\r\n"),
        ("a bare CR in a field", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n"),
        ("a bare CR ending a line", "GET / HTTP/1.1\rHost: a\r\n\r\n"),
        ("a bare LF ending a line", "GET / HTTP/1.1\nHost: a\r\n\r\n"),
        ("a NUL in a field", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\u{0}2\r\n\r\n"),
        ("a NUL in the target", "GET /a\u{0}b HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("a control byte in a field", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\u{1}2\r\n\r\n"),
        ("whitespace before the colon", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello"),
        ("no Host in HTTP/1.1", "GET / HTTP/1.1\r\nX-A: 1\r\n\r\n"),
        ("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("a request line with two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("a bad version", "GET / HTTP/1.x\r\nHost: a\r\n\r\n"),
        ("a version too long", "GET / HTTP/1.10\r\nHost: a\r\n\r\n"),
        ("a version too short", "GET / HTTP/1\r\nHost: a\r\n\r\n"),
        ("a fourth part in the request line", "GET / HTTP/1.1 x\r\nHost: a\r\n\r\n"),
        ("no version", "GET /\r\nHost: a\r\n\r\n"),
        ("a request line ending in a space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n"),
        ("a lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n"),
        ("a body on CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"),
        ("a field without a colon", "GET / HTTP/1.1\r\nHost: a\r\nJunk\r\n\r\n"),
        ("a field value that is not UTF-8", "GET / HTTP/1.1\r\nHost: a\r\nX-A: \u{FF}\r\n\r\n"),
    ]

    @Test("Refused with 400, whole or byte by byte, and nothing is read after", arguments: refusedWith400)
    func refused(_ what: String, _ text: String) {
        var bytes = Array(text.utf8)
        if what == "a field value that is not UTF-8" {
            // Swift strings are UTF-8: put the raw 0xFF byte in by hand.
            let index = bytes.firstIndex(of: 0xC3)!
            bytes.replaceSubrange(index...(index + 1), with: [0xFF])
        }
        for pieceSize in [bytes.count, 1] {
            var decoder = RequestDecoder(limits: .init(maxHeaderBytes: 64 * 1024, maxHeaders: 100))
            var events: [String] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + pieceSize)
                decoder.feed(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
                while let event = decoder.next() {
                    if case .failure(let error) = event {
                        events.append("failure \(error.status)")
                    } else if case .head = event {
                        events.append("head")
                    }
                }
            }
            #expect(events.last == "failure 400", "\(what), pieces of \(pieceSize): \(events)")
            #expect(events.filter { $0.hasPrefix("failure") }.count == 1)
            decoder.feed(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
            #expect(decoder.next() == nil, "\(what): the decoder must read nothing after a failure")
        }
    }

    @Test("Only HTTP/1.x is served: HTTP/2.0 in a request line gets 505")
    func otherVersion() {
        #expect(decode("GET / HTTP/2.0\r\nHost: a\r\n\r\n").events == ["failure 505"])
    }

    @Test("A head past max-header-bytes gets 431 as soon as the limit is passed, before the head ends")
    func headTooLarge() {
        let limits = RequestDecoder.Limits(maxHeaderBytes: 1024, maxHeaders: 100)
        let start = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "a", count: 1100)
        #expect(decode(start, limits: limits).events == ["failure 431"])
        #expect(decode(start, pieceSize: 100, limits: limits).events == ["failure 431"])
        let fits = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "a", count: 900) + "\r\n\r\n"
        #expect(decode(fits, limits: limits).events == ["head GET / none", "end"])
    }

    @Test("More header fields than max-headers get 431")
    func tooManyHeaders() {
        let limits = RequestDecoder.Limits(maxHeaderBytes: 64 * 1024, maxHeaders: 5)
        let fields = (1...6).map { "X-\($0): v\r\n" }.joined()
        #expect(decode("GET / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n", limits: limits).events == ["failure 431"])
        let fewer = (1...4).map { "X-\($0): v\r\n" }.joined()
        #expect(
            decode("GET / HTTP/1.1\r\nHost: a\r\n" + fewer + "\r\n", limits: limits).events == [
                "head GET / none", "end",
            ]
        )
    }

    @Test("Trailers count against the limits")
    func trailersTooLarge() {
        let limits = RequestDecoder.Limits(maxHeaderBytes: 256, maxHeaders: 100)
        let text =
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: "
            + String(repeating: "t", count: 300) + "\r\n\r\n"
        #expect(decode(text, limits: limits).events == ["head POST / chunked", "failure 431"])
    }
}
