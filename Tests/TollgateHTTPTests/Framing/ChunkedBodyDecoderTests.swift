import Testing
import TollgateHTTP

@Suite("The framing core: chunked bodies, both strictness settings")
struct ChunkedBodyDecoderTests {
    typealias Outcome = FramingDriver.ChunkedOutcome

    static let strict = FramingRules.strict(maximumHeadBytes: 64 * 1024, maximumHeadFields: 100)
    static let lenient = FramingRules.lenient(maximumHeadBytes: 128 * 1024)

    /// Decodes `bytes` whole and cut in two at every position, expecting the same outcome each way.
    static func decode(_ bytes: [UInt8], _ rules: FramingRules) -> Outcome {
        let whole = FramingDriver.chunked([bytes], rules: rules)
        for pieces in FramingDriver.everyTwoPieceSplit(bytes) {
            let split = FramingDriver.chunked(pieces, rules: rules)
            #expect(split == whole, "cut after \(pieces[0].count) bytes")
        }
        return whole
    }

    static func decode(_ text: String, _ rules: FramingRules) -> Outcome {
        decode(Array(text.utf8), rules)
    }

    static func ended(body: String, trailers: [String] = [], rest: String = "") -> Outcome {
        Outcome(body: Array(body.utf8), trailers: trailers, ended: true, rest: Array(rest.utf8))
    }

    @Test("Extensions, whitespace before them, trailers and the next message's bytes read the same on both sides")
    func fullBody() {
        // A CR inside chunk data is data.
        let text = "6;name=value\r\nhel\rlo\r\n6 \t;x\r\n world\r\na\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\nNEXT"
        for rules in [Self.strict, Self.lenient] {
            #expect(
                Self.decode(text, rules)
                    == Self.ended(body: "hel\rlo world0123456789", trailers: ["X-Trailer: t", "Y: u"], rest: "NEXT")
            )
        }
    }

    @Test("A body of only the last chunk, and upper- and lower-case hex digits")
    func emptyAndHex() {
        for rules in [Self.strict, Self.lenient] {
            #expect(Self.decode("0\r\n\r\n", rules) == Self.ended(body: ""))
            let body = String(repeating: "x", count: 0xAb)
            #expect(Self.decode("aB\r\n\(body)\r\n0\r\n\r\n", rules) == Self.ended(body: body))
        }
    }

    @Test(
        "A bare LF ends a line on the lenient side only",
        arguments: [
            ("5\nhello\r\n0\r\n\r\n", FramingError.bareLF(.chunkSizeLine)),
            ("5\r\nhello\n0\r\n\r\n", .chunkDataNotFollowedByLineEnd),
            ("5\r\nhello\r\n0\r\nX: y\n\r\n", .bareLF(.trailerSection)),
            ("5\r\nhello\r\n0\r\n\n", .bareLF(.trailerSection)),
        ]
    )
    func bareLF(text: String, strictError: FramingError) {
        #expect(Self.decode(text, Self.strict).failure == strictError)
        let lenient = Self.decode(text, Self.lenient)
        #expect(lenient.failure == nil)
        #expect(lenient.ended)
        #expect(lenient.body == Array("hello".utf8))
    }

    @Test("A control byte in a chunk extension is refused on the strict side only", arguments: [0x01, 0x0B, 0x1F, 0x7F])
    func controlByteInExtension(byte: UInt8) {
        let bytes = Array("2;a=".utf8) + [byte] + Array("\r\nhi\r\n0\r\n\r\n".utf8)
        #expect(Self.decode(bytes, Self.strict).failure == .controlByteInChunkExtension)
        #expect(Self.decode(bytes, Self.lenient) == Self.ended(body: "hi"))
        // A tab is whitespace, not a control byte, on both sides.
        let tab = Array("2;a=\tb\r\nhi\r\n0\r\n\r\n".utf8)
        #expect(Self.decode(tab, Self.strict) == Self.ended(body: "hi"))
    }

    @Test(
        "Refused on both sides",
        arguments: [
            ("5;a\rb\r\nhello\r\n0\r\n\r\n", FramingError.bareCR(.chunkSizeLine)),
            ("5;a\0\r\nhello\r\n0\r\n\r\n", .nul(.chunkSizeLine)),
            ("0\r\nX: a\rb\r\n\r\n", .bareCR(.trailerSection)),
            ("0\r\nX: a\0\r\n\r\n", .nul(.trailerSection)),
            (" 5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize(" 5")),
            ("\r\nhello\r\n0\r\n\r\n", .invalidChunkSize("")),
            ("zz\r\n", .invalidChunkSize("zz")),
            ("5x\r\nhello\r\n0\r\n\r\n", .invalidChunkSize("5x")),
            ("5 x\r\nhello\r\n0\r\n\r\n", .invalidChunkSize("5 x")),
            ("-5\r\n", .invalidChunkSize("-5")),
            ("0x5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize("0x5")),
            ("5\r\nhelloXY0\r\n\r\n", .chunkDataNotFollowedByLineEnd),
            ("5\r\nhello\rX0\r\n\r\n", .chunkDataNotFollowedByLineEnd),
        ]
    )
    func refused(text: String, error: FramingError) {
        for rules in [Self.strict, Self.lenient] {
            #expect(Self.decode(text, rules).failure == error)
        }
    }

    @Test("Chunk sizes at the boundaries: 15 digits (leading zeros count) are read, 16 are refused")
    func sizeBoundaries() {
        for rules in [Self.strict, Self.lenient] {
            #expect(Self.decode("000000000000005\r\nhello\r\n0\r\n\r\n", rules) == Self.ended(body: "hello"))
            #expect(Self.decode("0000000000000005\r\nhello\r\n0\r\n\r\n", rules).failure == .chunkSizeTooLarge)
            #expect(Self.decode("10000000000000000\r\n", rules).failure == .chunkSizeTooLarge)
            // The largest size: its data is read piece by piece as it comes, without overflow.
            let largest = Self.decode("fffffffffffffff\r\nabc", rules)
            #expect(largest.failure == nil)
            #expect(!largest.ended)
            #expect(largest.body == Array("abc".utf8))
        }
    }

    /// A chunk-size line of `length` bytes before its line end: a one-byte chunk with an extension.
    static func chunkLine(length: Int, lineEnd: String = "\r\n") -> [UInt8] {
        Array(("1;" + String(repeating: "e", count: length - 2) + lineEnd + "z\r\n0\r\n\r\n").utf8)
    }

    @Test("A chunk-size line at its limit is read, one byte longer is refused; the lenient side allows one byte more")
    func chunkLineLimit() {
        #expect(Self.decode(Self.chunkLine(length: 4095), Self.strict) == Self.ended(body: "z"))
        #expect(Self.decode(Self.chunkLine(length: 4096), Self.strict).failure == .tooLarge(.chunkSizeLine))
        #expect(Self.decode(Self.chunkLine(length: 4096), Self.lenient) == Self.ended(body: "z"))
        #expect(Self.decode(Self.chunkLine(length: 4097), Self.lenient).failure == .tooLarge(.chunkSizeLine))
        #expect(Self.decode(Self.chunkLine(length: 4097, lineEnd: "\n"), Self.lenient) == Self.ended(body: "z"))
        #expect(Self.decode(Self.chunkLine(length: 4098, lineEnd: "\n"), Self.lenient).failure == .tooLarge(.chunkSizeLine))
    }

    @Test("The trailer section's limits: bytes on both sides, fields on the strict side only")
    func trailerLimits() {
        let strict = FramingRules.strict(maximumHeadBytes: 64, maximumHeadFields: 2)
        let lenient = FramingRules.lenient(maximumHeadBytes: 64)
        func trailer(_ length: Int) -> String { "X: " + String(repeating: "v", count: length - 3) }
        // Lines count with two bytes for their ends, and the empty line needs room left: a
        // section counted at 63 bytes is read, at 64 it is refused, on both sides.
        for rules in [strict, lenient] {
            #expect(Self.decode("0\r\n\(trailer(61))\r\n\r\n", rules) == Self.ended(body: "", trailers: [trailer(61)]))
            #expect(Self.decode("0\r\n\(trailer(62))\r\n\r\n", rules).failure == .tooLarge(.trailerSection))
            #expect(Self.decode("0\r\n\(trailer(70))\r\n\r\n", rules).failure == .tooLarge(.trailerSection))
        }
        // 30 + 2 + 30 + 2 leave nothing for a third line.
        #expect(Self.decode("0\r\n\(trailer(30))\r\n\(trailer(30))\r\nZ: 1\r\n\r\n", strict).failure == .tooLarge(.trailerSection))
        #expect(Self.decode("0\r\nA: 1\r\nB: 2\r\n\r\n", strict) == Self.ended(body: "", trailers: ["A: 1", "B: 2"]))
        #expect(Self.decode("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", strict).failure == .tooManyLines(.trailerSection))
        #expect(Self.decode("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", lenient).trailers == ["A: 1", "B: 2", "C: 3"])
    }

    @Test("Trailer lines are handed over as they are, for each side to check or drop")
    func trailerLinesAsTheyAre() {
        for rules in [Self.strict, Self.lenient] {
            let outcome = Self.decode("0\r\nX: a\r\n folded\r\nBad Name : v\r\n\r\n", rules)
            #expect(outcome == Self.ended(body: "", trailers: ["X: a", " folded", "Bad Name : v"]))
        }
    }
}
