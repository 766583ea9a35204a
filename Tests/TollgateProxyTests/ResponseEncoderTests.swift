import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateProxy

@Suite("Response heads on the wire: status line, the message's fields, then the proxy's")
struct ResponseEncoderTests {
    private func encode(
        _ head: HTTPResponseHead,
        adding added: HeaderFields = HeaderFields(),
        minorVersion: Int = 1
    ) -> String {
        var buffer = ByteBuffer()
        ResponseEncoder.head(head, adding: added, minorVersion: minorVersion, into: &buffer)
        return String(buffer: buffer)
    }

    @Test("The added fields follow the message's own, and the head ends with an empty line")
    func addedAfterOwn() {
        let head = HTTPResponseHead(status: 200, reason: "OK", headerFields: ["Content-Length": "3", "ETag": "\"a\""])
        let text = encode(head, adding: ["Via": "1.1 tollgate", "Cache-Status": "tollgate; hit"])
        #expect(
            text
                == "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nETag: \"a\"\r\nVia: 1.1 tollgate\r\nCache-Status: tollgate; hit\r\n\r\n"
        )
    }

    @Test("HTTP/1.0 clients get an HTTP/1.0 status line; an empty reason becomes the standard one")
    func versionAndReason() {
        #expect(encode(HTTPResponseHead(status: 404, reason: ""), minorVersion: 0) == "HTTP/1.0 404 Not Found\r\n\r\n")
        #expect(encode(HTTPResponseHead(status: 299, reason: "Custom Thing")) == "HTTP/1.1 299 Custom Thing\r\n\r\n")
    }

    @Test("A status outside three digits is written as it is")
    func oddStatus() {
        #expect(encode(HTTPResponseHead(status: 1000, reason: "X")).hasPrefix("HTTP/1.1 1000 X\r\n"))
    }

    @Test("Framing: chunked is announced among the added fields, never in the message's own")
    func chunkedAnnouncedInAdded() {
        var fields: HeaderFields = ["Transfer-Encoding": "chunked", "ETag": "\"e\""]
        var added = HeaderFields()
        var length: Int64?
        let framing = ResponseFraming.decide(
            status: 200,
            fields: &fields,
            added: &added,
            requestIsHead: false,
            clientMinorVersion: 1,
            bodyLength: &length
        )
        #expect(framing == .chunked)
        #expect(!fields.contains("Transfer-Encoding"))
        #expect(fields["ETag"] == "\"e\"")
        #expect(added["Transfer-Encoding"] == "chunked")
    }

    @Test("Framing: agreeing duplicate lengths frame the body; differing ones do not")
    func duplicateLengths() {
        var same: HeaderFields = ["Content-Length": "4", "content-length": "4"]
        var differ: HeaderFields = ["Content-Length": "4", "content-length": "5"]
        var added = HeaderFields()
        var length: Int64?
        #expect(
            ResponseFraming.decide(
                status: 200,
                fields: &same,
                added: &added,
                requestIsHead: false,
                clientMinorVersion: 1,
                bodyLength: &length
            ) == .contentLength
        )
        #expect(
            ResponseFraming.decide(
                status: 200,
                fields: &differ,
                added: &added,
                requestIsHead: false,
                clientMinorVersion: 0,
                bodyLength: &length
            ) == .untilClose
        )
        #expect(!differ.contains("Content-Length"))
    }

    @Test("Framing: the body length is given for length framing only")
    func bodyLengthOfTheFraming() {
        func decide(_ status: Int, _ fields: HeaderFields, head: Bool = false) -> (ResponseFraming, Int64?) {
            var fields = fields
            var added = HeaderFields()
            var length: Int64? = 99  // overwritten in every case
            let framing = ResponseFraming.decide(
                status: status, fields: &fields, added: &added, requestIsHead: head, clientMinorVersion: 1,
                bodyLength: &length
            )
            return (framing, length)
        }
        #expect(decide(200, ["Content-Length": "1024"]) == (.contentLength, 1024))
        #expect(decide(200, ["Content-Length": "0"]) == (.contentLength, 0))
        #expect(decide(200, [:]) == (.chunked, nil))
        #expect(decide(204, ["Content-Length": "5"]) == (.none, nil))
        #expect(decide(200, ["Content-Length": "5"], head: true) == (.none, nil))
    }
}
