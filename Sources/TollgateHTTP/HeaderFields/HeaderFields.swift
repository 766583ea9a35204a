/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept exactly as received, because a proxy must forward
/// fields in order and some fields (Set-Cookie) cannot be combined.
///
/// The lines are kept as bytes in one array: for each line in order, its name key and lengths,
/// then its wire form `name: value\r\n`. A parser appends the bytes it read; an encoder copies
/// each line's wire form out in one piece; a copy of the list is one retain, and a copy that is
/// then changed copies one array of plain bytes. (A list of string pairs cost two
/// retains per line for every copy and every walk over it, and a string per name and value for
/// every head parsed or read from the cache: a quarter of a cache hit's CPU.) Values are
/// strings only when asked for by name.
///
/// Every line carries a name key, a hash of its name with letters folded to lower case,
/// computed once when the line is added. Lookups compare keys first and names only on a key
/// match, so asking a head of twenty fields for one that is absent touches no name at all.
///
/// The type is spread over files by concern: the storage here, ``Field`` and ``Line``, lookups,
/// editing, the wire form, and the sequence conformance in `HeaderFields+*.swift`. The storage
/// members are internal rather than private so those extensions can reach them; nothing outside
/// this type touches them.
public struct HeaderFields: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The fixed part of a line in ``bytes``, before its wire form: the name key and the name's
    /// and the value's byte counts, three unaligned `UInt32`s.
    static let lineHeaderSize = 12

    /// The lines, one after another, each its header (``lineHeaderSize`` bytes) then its wire form
    /// `name: value\r\n`; nothing else. One array, so a list is one allocation and a copy one
    /// retain; lines are found by walking (a head has tens of them), by key first.
    var bytes: [UInt8]
    /// The number of lines.
    public internal(set) var count: Int
    /// One bit per line, ``keyBit(_:)`` of its name key: a bit that is clear means no line has a
    /// name with that key, so asking for an absent field (most lookups: `Transfer-Encoding`,
    /// `Connection`, `Expect` …) walks no line. Kept by every change of the lines; derived
    /// from them, so it takes no part in equality.
    var keyMask: UInt64 = 0

    /// Creates an empty list.
    public init() {
        bytes = []
        count = 0
    }

    /// The bit of ``keyMask`` that stands for lines whose name key is `key`.
    @inline(__always)
    public static func keyBit(_ key: UInt32) -> UInt64 { 1 &<< UInt64(key & 63) }

    /// False when certainly no line's name key has a bit in `mask` (an OR of ``keyBit(_:)``s); true
    /// when one may (a bit is shared by many keys: then look at the lines).
    @inline(__always)
    public func mayContainKey(in mask: UInt64) -> Bool { keyMask & mask != 0 }

    /// An empty list with room for the field lines of `head`, a whole message head (start line,
    /// field lines, empty line): one allocation for a parser's list. The lines are estimated at
    /// one per 16 bytes (real heads average 25–40), not counted: a pass over every byte cost more
    /// than the rare regrowth of a head of very short lines.
    public init(capacityForHead head: UnsafeRawBufferPointer) {
        self.init()
        bytes.reserveCapacity(head.count + (head.count / 16 + 2) * Self.lineHeaderSize)
    }

    /// Creates a list from name/value pairs, in order.
    public init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { add(name: name, value: value) }
    }

    /// Creates a list from a dictionary literal, in literal order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Whether there are no field lines.
    public var isEmpty: Bool { count == 0 }

    // MARK: reading lines

    /// The line at byte `offset` of `raw` (``bytes``), and the offset of the next.
    @inline(__always)
    static func line(at offset: Int, in raw: UnsafeRawBufferPointer) -> (line: Line, next: Int) {
        let key = raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        let nameCount = Int(raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let valueCount = Int(raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
        let nameStart = offset + lineHeaderSize
        let valueStart = nameStart + nameCount + 2
        let line = Line(
            nameKey: key,
            name: UnsafeRawBufferPointer(rebasing: raw[nameStart..<nameStart + nameCount]),
            value: UnsafeRawBufferPointer(rebasing: raw[valueStart..<valueStart + valueCount])
        )
        return (line, valueStart + valueCount + 2)
    }

    /// Calls `body` with each line and its offset, in order, until it returns false; nothing is
    /// copied.
    func walk(from start: Int = 0, _ body: (Int, Line) throws -> Bool) rethrows {
        try bytes.withUnsafeBytes { raw in
            var offset = start
            while offset < raw.count {
                let (line, next) = Self.line(at: offset, in: raw)
                guard try body(offset, line) else { return }
                offset = next
            }
        }
    }

    /// ``walk(from:_:)`` over the lines whose name key is `key` only: the others are stepped over
    /// by their fixed part (key and counts) without being made ``Line``s. Keys may collide: the
    /// caller still compares the name.
    func walk(key: UInt32, from start: Int = 0, _ body: (Int, Line) throws -> Bool) rethrows {
        try bytes.withUnsafeBytes { raw in
            var offset = start
            while offset < raw.count {
                guard raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self) == key else {
                    let nameCount = Int(raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                    let valueCount = Int(raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
                    offset += Self.lineHeaderSize + nameCount + valueCount + 4
                    continue
                }
                let (line, next) = Self.line(at: offset, in: raw)
                guard try body(offset, line) else { return }
                offset = next
            }
        }
    }
}
