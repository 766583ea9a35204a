import Testing
import TollgateHTTP

@Suite("The framing core: finding a head's end, both strictness settings")
struct HeadScannerTests {
    typealias Outcome = FramingDriver.HeadOutcome

    static let strict = FramingRules.strict(maximumHeadBytes: 64 * 1024, maximumHeadFields: 100)
    static let lenient = FramingRules.lenient(maximumHeadBytes: 128 * 1024)

    /// Scans `text` whole and cut in two at every position, expecting the same outcome each way.
    static func scan(_ text: String, _ rules: FramingRules) -> Outcome {
        let bytes = Array(text.utf8)
        let whole = FramingDriver.head([bytes], rules: rules)
        for pieces in FramingDriver.everyTwoPieceSplit(bytes) {
            #expect(FramingDriver.head(pieces, rules: rules) == whole, "cut after \(pieces[0].count) bytes")
        }
        return whole
    }

    @Test("A head is found whole or cut anywhere; empty lines before it are reported apart; what follows is left")
    func found() {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n"
        for rules in [Self.strict, Self.lenient] {
            #expect(
                Self.scan("\r\n\r\n" + head + "body", rules)
                    == Outcome(emptyLines: [2, 2], headLength: head.utf8.count, rest: Array("body".utf8))
            )
            #expect(Self.scan(String(head.dropLast(2)), rules) == Outcome(rest: Array(head.dropLast(2).utf8)))
        }
    }

    @Test("A bare LF ends a line (and an empty line) on the lenient side only")
    func bareLF() {
        let head = "HTTP/1.1 200 OK\nX: y\r\n\n"
        #expect(Self.scan(head, Self.strict).failure == .bareLF(.head))
        #expect(Self.scan(head, Self.lenient) == Outcome(headLength: head.utf8.count))
        #expect(Self.scan("\n" + head, Self.lenient) == Outcome(emptyLines: [1], headLength: head.utf8.count))
    }

    @Test(
        "Refused on both sides: a bare CR, a NUL",
        arguments: [
            ("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", FramingError.bareCR(.head)),
            ("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", .nul(.head)),
            ("\r\r\n", .bareCR(.head)),
        ]
    )
    func refused(text: String, error: FramingError) {
        for rules in [Self.strict, Self.lenient] {
            #expect(Self.scan(text, rules).failure == error)
        }
    }

    /// A head of exactly `length` bytes, line ends included.
    static func head(length: Int) -> String {
        let start = "GET / HTTP/1.1\r\nX: "
        return start + String(repeating: "v", count: length - start.utf8.count - 4) + "\r\n\r\n"
    }

    @Test("A head at its limit is read, one byte longer is refused; the lenient side allows one byte more")
    func sizeLimit() {
        let strict = FramingRules.strict(maximumHeadBytes: 40, maximumHeadFields: 100)
        let lenient = FramingRules.lenient(maximumHeadBytes: 40)
        #expect(Self.scan(Self.head(length: 40), strict) == Outcome(headLength: 40))
        #expect(Self.scan(Self.head(length: 41), strict).failure == .tooLarge(.head))
        #expect(Self.scan(Self.head(length: 41), lenient) == Outcome(headLength: 41))
        #expect(Self.scan(Self.head(length: 42), lenient).failure == .tooLarge(.head))
        // Refused as soon as the bytes up to the limit have come without the head's end.
        #expect(Self.scan(String(repeating: "x", count: 40), strict).failure == .tooLarge(.head))
        #expect(Self.scan(String(repeating: "x", count: 39), strict).failure == nil)
    }

    @Test("Lines are counted on the strict side only (the start line and the fields)")
    func lineCount() {
        let strict = FramingRules.strict(maximumHeadBytes: 1024, maximumHeadFields: 2)
        let two = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n"
        let three = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(Self.scan(two, strict) == Outcome(headLength: two.utf8.count))
        #expect(Self.scan(three, strict).failure == .tooManyLines(.head))
        #expect(Self.scan(three, FramingRules.lenient(maximumHeadBytes: 1024)) == Outcome(headLength: three.utf8.count))
    }

    @Test("HeadLines gives each line without its line end and stops after the empty line")
    func headLines() {
        let bytes = Array("HTTP/1.1 200 OK\r\nA: 1\n folded\r\n\r\nbody\r\n".utf8)
        let lines = bytes.withUnsafeBytes { raw in HeadLines(raw).map { String(decoding: $0, as: UTF8.self) } }
        #expect(lines == ["HTTP/1.1 200 OK", "A: 1", " folded", ""])
    }
}
