import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateProxy

@Suite("The proxy's own responses")
struct OwnResponseTests {
    @Test(
        "The body is the message on one line: each run of CR and LF one space, none at the ends",
        arguments: [
            ("upstream refused", "upstream refused\n"),
            ("a\nb", "a b\n"),
            // "\r\n" is a single Character: a Character-level split left it in the body.
            ("cannot connect\r\nto 127.0.0.1:9", "cannot connect to 127.0.0.1:9\n"),
            ("\n\r\nfirst\r\n\r\n\nsecond\r", "first second\n"),
            ("", "\n"),
            ("é\rü", "é ü\n"),
        ]
    )
    func oneLine(message: String, body: String) {
        let answer = OwnResponse(.upstreamUnreachable, message)
        #expect(String(buffer: answer.body) == body)
        #expect(answer.head(minorVersion: 1, close: false).headerFields[.contentLength] == String(body.utf8.count))
    }
}
