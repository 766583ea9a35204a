import Testing
import TollgateHTTP

@Suite("The line reader: its word-at-a-time skip reads exactly as a byte-at-a-time reader")
struct LineReaderTests {
    /// The line reader's rules, one byte at a time: the reference the skip must agree with.
    static func reference(
        _ bytes: [UInt8],
        from start: Int,
        lineStart: Int,
        limit: Int,
        acceptsBareLF: Bool
    ) -> LineReader.Scan {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x0A:
                let afterCR = index > lineStart && bytes[index - 1] == 0x0D
                guard afterCR || acceptsBareLF else { return .failure(.bareLF(.head)) }
                return .line(contentEnd: afterCR ? index - 1 : index, next: index + 1)
            case 0x0D:
                guard index + 1 < bytes.count else { return .incomplete(scanned: index) }
                if bytes[index + 1] != 0x0A { return .failure(.bareCR(.head)) }
            case 0:
                return .failure(.nul(.head))
            default:
                break
            }
            index += 1
            if index >= limit { return .failure(.tooLarge(.head)) }
        }
        return .incomplete(scanned: index)
    }

    static func scan(_ bytes: [UInt8], from start: Int, lineStart: Int, limit: Int, acceptsBareLF: Bool) -> LineReader.Scan {
        bytes.withUnsafeBytes {
            LineReader.scan($0, from: start, lineStart: lineStart, limit: limit, acceptsBareLF: acceptsBareLF, part: .head)
        }
    }

    @Test("Random lines of mostly plain bytes, with line ends, NULs, tabs and high bytes anywhere, at every limit")
    func agreesWithReference() {
        var generator = SeededGenerator(seed: 0x5EED)
        // Mostly visible ASCII (what the skip passes over), and now and then a byte it must stop at
        // or one just around its threshold.
        let rare: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x0C, 0x0E, 0x0F, 0x1F, 0x7F, 0x80, 0x8D, 0xFF]
        var compared = 0
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...80, using: &generator)
            let bytes = (0..<count).map { _ -> UInt8 in
                Int.random(in: 0..<20, using: &generator) == 0
                    ? rare.randomElement(using: &generator)! : UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            let lineStart = Int.random(in: 0...max(0, count / 4), using: &generator)
            let start = Int.random(in: lineStart...max(lineStart, count), using: &generator)
            let limit = Int.random(in: (start + 1)...(count + 12), using: &generator)
            for acceptsBareLF in [false, true] {
                let expected = Self.reference(bytes, from: start, lineStart: lineStart, limit: limit, acceptsBareLF: acceptsBareLF)
                let actual = Self.scan(bytes, from: start, lineStart: lineStart, limit: limit, acceptsBareLF: acceptsBareLF)
                #expect(actual == expected, "bytes \(bytes) from \(start) line \(lineStart) limit \(limit)")
                compared += 1
            }
        }
        #expect(compared == 8_000)
    }

    @Test("A long plain line: its end found at any offset, too large exactly where the byte reader says")
    func longLines() {
        for length in 0..<40 {
            let line = [UInt8](repeating: UInt8(ascii: "a"), count: length) + [0x0D, 0x0A]
            #expect(Self.scan(line, from: 0, lineStart: 0, limit: 1_000, acceptsBareLF: false) == .line(contentEnd: length, next: length + 2))
            for limit in 1...(length + 3) {
                #expect(
                    Self.scan(line, from: 0, lineStart: 0, limit: limit, acceptsBareLF: false)
                        == Self.reference(line, from: 0, lineStart: 0, limit: limit, acceptsBareLF: false),
                    "length \(length) limit \(limit)"
                )
            }
            for special: UInt8 in [0x00, 0x0D] where length > 0 {
                var broken = line
                broken[length - 1] = special
                #expect(
                    Self.scan(broken, from: 0, lineStart: 0, limit: 1_000, acceptsBareLF: false)
                        == Self.reference(broken, from: 0, lineStart: 0, limit: 1_000, acceptsBareLF: false)
                )
            }
        }
    }
}

/// A deterministic generator (Knuth's MMIX linear congruential one), so a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state ^ (state >> 29)
    }
}
