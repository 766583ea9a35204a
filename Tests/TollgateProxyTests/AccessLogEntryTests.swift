import Foundation
import Testing
import TollgateHTTP

@testable import TollgateProxy

@Suite("Access log lines (combined format)")
struct AccessLogEntryTests {
    private func entry(target: String = "http://example.com/a?b=1", userAgent: String? = "curl/8") -> AccessLogEntry {
        AccessLogEntry(
            clientAddress: "127.0.0.1",
            time: 0,
            method: "GET",
            target: target,
            version: "HTTP/1.1",
            status: 200,
            bodyBytes: 42,
            referer: nil,
            userAgent: userAgent,
            rule: "hosts[0]:**",
            session: "default"
        )
    }

    @Test("The rule and the session are the last two fields; without them they are '-'")
    func ruleAndSession() {
        var entry = entry()
        #expect(entry.combinedLogLine.hasSuffix("\"curl/8\" \"hosts[0]:**\" \"default\""))
        entry.rule = "-"
        entry.session = "-"
        #expect(entry.combinedLogLine.hasSuffix("\"curl/8\" \"-\" \"-\""))
    }

    @Test("The JSON format has one object per line with every field, escaped and without passwords")
    func jsonLine() throws {
        var entry = entry(target: "http://alice:pw@example.com/x", userAgent: "a\"b\n")
        entry.durationMilliseconds = 12
        let line = entry.jsonLine
        #expect(!line.contains("\n"))
        #expect(!line.contains("pw@"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["client"] as? String == "127.0.0.1")
        #expect(object["method"] as? String == "GET")
        #expect(object["target"] as? String == "http://***@example.com/x")
        #expect(object["status"] as? Int == 200)
        #expect(object["bytes"] as? Int == 42)
        #expect(object["user_agent"] as? String == "a\"b\n")
        #expect(object["referer"] is NSNull)
        #expect(object["rule"] as? String == "hosts[0]:**")
        #expect(object["session"] as? String == "default")
        #expect(object["duration_ms"] as? Int == 12)
        #expect(
            (object["time"] as? String)?.wholeMatch(of: #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}/#) != nil
        )
    }

    @Test("The JSON line's client_tls is the TLS version of the client's connection, null for plain HTTP; the combined line has none")
    func clientTLS() throws {
        var entry = entry()
        let plain = try #require(try JSONSerialization.jsonObject(with: Data(entry.jsonLine.utf8)) as? [String: Any])
        #expect(plain["client_tls"] is NSNull)
        entry.clientTLS = "TLSv1.3"
        let overTLS = try #require(try JSONSerialization.jsonObject(with: Data(entry.jsonLine.utf8)) as? [String: Any])
        #expect(overTLS["client_tls"] as? String == "TLSv1.3")
        #expect(!entry.combinedLogLine.contains("TLS"))
    }

    @Test("tunnel: a relay that is not WebSocket logs its bytes each way and how it ended; other exchanges and WebSocket have null")
    func tunnelObject() throws {
        func object(_ record: ExchangeRecord) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(record.entry().jsonLine.utf8)) as? [String: Any])
        }
        let head = ClientRequestHead(
            method: "CONNECT", target: "a.test:443", minorVersion: 1, headerFields: [:], framing: .none, byteCount: 0
        )
        var record = ExchangeRecord(head: head, clientAddress: "127.0.0.1")
        #expect(try object(record)["tunnel"] is NSNull)
        record.bodyBytes = 300
        record.requestBodyBytes = 120
        record.relayEnd = .clientClosed
        let tunnel = try #require(try object(record)["tunnel"] as? [String: Any])
        #expect(tunnel["bytes_to_upstream"] as? Int == 120)
        #expect(tunnel["bytes_to_client"] as? Int == 300)
        #expect(tunnel["end"] as? String == "client-closed")
        #expect(!record.closedIdle)
        record.relayEnd = .idleTimeout
        #expect(record.closedIdle)
        record.webSocket = WebSocketTotals()
        #expect(try object(record)["tunnel"] is NSNull)
        #expect(!record.entry().combinedLogLine.contains("idle"))
    }

    @Test("A line has the client, time, request line, status, bytes, referer and user agent")
    func format() {
        let line = entry().combinedLogLine
        let pattern =
            #/127\.0\.0\.1 - - \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "GET http://example\.com/a\?b=1 HTTP/1\.1" 200 42 "-" "curl/8" "hosts\[0\]:\*\*" "default"/#
        #expect(line.wholeMatch(of: pattern) != nil, "\(line)")
    }

    @Test("No response and no body are written as '-'")
    func missingValues() {
        var entry = entry()
        entry.status = nil
        entry.bodyBytes = 0
        #expect(entry.combinedLogLine.contains("HTTP/1.1\" - - \"-\""))
    }

    @Test("A password in the URL is not logged")
    func userinfoIsRedacted() {
        let line = entry(target: "http://alice:s3cret@example.com/x?y=@z").combinedLogLine
        #expect(!line.contains("s3cret"))
        #expect(!line.contains("alice"))
        #expect(line.contains("http://***@example.com/x?y=@z"))
        #expect(AccessLogEntry.redactingUserinfo("/plain?a=@b") == "/plain?a=@b")
    }

    @Test("Quotes and control characters from the client cannot forge a line")
    func escaping() {
        let line = entry(userAgent: "evil\"\n127.0.0.1 - - fake").combinedLogLine
        #expect(!line.contains("\n"))
        #expect(line.hasSuffix("\"evil\\\"\\x0a127.0.0.1 - - fake\" \"hosts[0]:**\" \"default\""))
    }

    @Test("Every byte outside visible ASCII, a quote and a backslash are escaped, byte for byte")
    func escapingByteForByte() {
        var entry = entry(userAgent: "a\\b\"c\u{7F}é\t")
        entry.bodyBytes = 1_234_567_890
        entry.referer = "http://r.example/"
        let tail = " 200 1234567890 \"http://r.example/\" \"a\\\\b\\\"c\\x7f\\xc3\\xa9\\x09\" \"hosts[0]:**\" \"default\""
        #expect(entry.combinedLogLine.hasSuffix(tail), "\(entry.combinedLogLine)")
    }
}
