import Testing

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
            userAgent: userAgent
        )
    }

    @Test("A line has the client, time, request line, status, bytes, referer and user agent")
    func format() {
        let line = entry().combinedLogLine
        let pattern =
            #/127\.0\.0\.1 - - \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "GET http://example\.com/a\?b=1 HTTP/1\.1" 200 42 "-" "curl/8"/#
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
        #expect(line.hasSuffix("\"evil\\\"\\x0a127.0.0.1 - - fake\""))
    }
}
