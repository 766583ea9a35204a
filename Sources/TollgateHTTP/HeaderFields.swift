/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept exactly as received, because a proxy must forward
/// fields in order and some fields (Set-Cookie) cannot be combined.
///
/// Every field carries a ``Field/nameKey``, a hash of its name with letters folded to lower
/// case, computed once when the field is made. Lookups compare keys first and strings only on a
/// key match, so asking a head of twenty fields for one that is absent touches no string at
/// all: on the proxy's hot path a request is asked for a few dozen names (hop-by-hop filtering,
/// Cache-Control, Pragma, Vary, Authorization …), and comparing strings each time was a third
/// of the reference-counting work of a cache hit.
public struct HeaderFields: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field line.
    public struct Field: Hashable, Sendable {
        /// The field name as received.
        public var name: String {
            didSet { nameKey = Self.nameKey(of: name) }
        }
        /// The field value, without leading or trailing whitespace.
        public var value: String
        /// ``nameKey(of:)`` of ``name``: equal for names that are equal ignoring ASCII case.
        public private(set) var nameKey: UInt32

        /// Creates a field line.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
            self.nameKey = Self.nameKey(of: name)
        }

        /// A hash of `name` with ASCII letters folded to lower case: names equal ignoring ASCII
        /// case have equal keys; different keys mean different names (equal keys do not mean
        /// equal names: lookups compare the names after the keys).
        public static func nameKey(of name: String) -> UInt32 {
            if let key = name.utf8.withContiguousStorageIfAvailable({ key(UnsafeRawBufferPointer($0)) }) { return key }
            return Array(name.utf8).withUnsafeBytes(key)
        }

        /// ``nameKey(of:)`` of a name given as its UTF-8 bytes (a token inside a field value).
        public static func nameKey<Bytes: Sequence<UInt8>>(ofBytes bytes: Bytes) -> UInt32 {
            if let key = bytes.withContiguousStorageIfAvailable({ key(UnsafeRawBufferPointer($0)) }) { return key }
            return Array(bytes).withUnsafeBytes(key)
        }

        /// Eight bytes at a time: every byte ORed with 0x20 (which lowercases ASCII letters and
        /// leaves digits, `-` and most other token bytes as they are; the few it merges, such as
        /// `^` and `~`, only cost a name comparison), mixed by multiply and xor-shift. A name is a
        /// few words, and keys are computed for every field parsed or decoded and every lookup.
        private static func key(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
            let fold: UInt64 = 0x2020_2020_2020_2020
            var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
            var offset = 0
            while offset + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) | fold
                hash = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
                hash ^= hash >> 32
                offset += 8
            }
            if offset < bytes.count {
                var word: UInt64 = 0
                var shift: UInt64 = 0
                while offset < bytes.count {
                    word |= UInt64(bytes[offset] | 0x20) << shift
                    shift += 8
                    offset += 1
                }
                hash = (hash ^ word) &* 0xC4CE_B9FE_1A85_EC53
                hash ^= hash >> 32
            }
            hash = (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
            return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        }

        /// Whether this line's name is `name` (ignoring ASCII case), whose key is `key`.
        @inline(__always)
        func isNamed(_ name: String, key: UInt32) -> Bool {
            nameKey == key && self.name.equalsIgnoringASCIICase(name)
        }
    }

    private var fields: [Field]

    /// Creates an empty list.
    public init() { fields = [] }

    /// An empty list with room for the field lines of `head`, a whole message head (start line,
    /// field lines, empty line): one allocation for a parser's list, not one per doubling.
    public init(capacityForHead head: UnsafeRawBufferPointer) {
        var lineEnds = 0
        for byte in head where byte == 0x0A { lineEnds += 1 }
        fields = []
        fields.reserveCapacity(Swift.max(0, lineEnds - 2))  // less the start line and the empty line
    }

    /// Creates a list from name/value pairs, in order.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates a list from a dictionary literal, in literal order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of field lines.
    public var count: Int { fields.count }
    /// Whether there are no field lines.
    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The index of the first line named `name` at or after `start`.
    private func index(of name: String, key: UInt32, from start: Int = 0) -> Int? {
        // Over the buffer: elements are borrowed, not copied (no retain of their strings).
        fields.withUnsafeBufferPointer { buffer in
            var index = start
            while index < buffer.count {
                if buffer[index].isNamed(name, key: key) { return index }
                index += 1
            }
            return nil
        }
    }

    /// The first value of the named field, or nil.
    public subscript(name: String) -> String? {
        get { index(of: name, key: Field.nameKey(of: name)).map { fields[$0].value } }
        set {
            if let newValue { replaceOrAdd(name: name, value: newValue) } else { remove(name) }
        }
    }

    /// Every value of the named field, in order (one entry per field line).
    public func values(for name: String) -> [String] {
        let key = Field.nameKey(of: name)
        guard var index = index(of: name, key: key) else { return [] }
        var values = [fields[index].value]
        while let next = self.index(of: name, key: key, from: index + 1) {
            values.append(fields[next].value)
            index = next
        }
        return values
    }

    /// Whether every line named `name` has the value `value` (true when there is none).
    public func allValues(for name: String, equal value: String) -> Bool {
        let key = Field.nameKey(of: name)
        return fields.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where buffer[index].isNamed(name, key: key) && buffer[index].value != value {
                return false
            }
            return true
        }
    }

    /// The number of lines with this name.
    public func count(named name: String) -> Int {
        let key = Field.nameKey(of: name)
        return fields.withUnsafeBufferPointer { buffer in
            var count = 0
            for index in buffer.indices where buffer[index].isNamed(name, key: key) { count += 1 }
            return count
        }
    }

    /// Whether any line has this name.
    public func contains(_ name: String) -> Bool {
        index(of: name, key: Field.nameKey(of: name)) != nil
    }

    /// Whether any line satisfies the predicate (the lines are lent to it, not copied).
    public func contains(where predicate: (borrowing Field) throws -> Bool) rethrows -> Bool {
        try fields.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where try predicate(buffer[index]) { return true }
            return false
        }
    }

    /// Makes room for `capacity` lines in all, so that adding lines up to it copies nothing.
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// Whether any line's ``Field/nameKey`` satisfies the predicate. Touches no string, so it is
    /// the cheap first test before comparing names (keys of different names may collide).
    public func containsNameKey(where predicate: (UInt32) -> Bool) -> Bool {
        fields.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where predicate(buffer[index].nameKey) { return true }
            return false
        }
    }

    /// Appends a field line.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every line of that name by one line with this value (at the first line's place).
    public mutating func replaceOrAdd(name: String, value: String) {
        let key = Field.nameKey(of: name)
        guard let first = index(of: name, key: key) else {
            fields.append(Field(name: name, value: value))
            return
        }
        fields[first].value = value
        var index = fields.count - 1
        while index > first {
            if fields[index].isNamed(name, key: key) { fields.remove(at: index) }
            index -= 1
        }
    }

    /// Removes every line of that name.
    public mutating func remove(_ name: String) {
        let key = Field.nameKey(of: name)
        guard index(of: name, key: key) != nil else { return }
        fields.removeAll { $0.isNamed(name, key: key) }
    }

    /// Removes every line that satisfies the predicate.
    public mutating func removeAll(where shouldRemove: (borrowing Field) -> Bool) {
        guard contains(where: shouldRemove) else { return }
        fields.removeAll(where: { shouldRemove($0) })
    }

    /// Lends the lines to `body` in order, without copying them (encoders walk every line of
    /// every message; iterating copies each line's two strings).
    public func withLines<Result>(_ body: (UnsafeBufferPointer<Field>) throws -> Result) rethrows -> Result {
        try fields.withUnsafeBufferPointer(body)
    }

    /// The field lines as name/value pairs.
    public var pairs: [(String, String)] { fields.map { ($0.name, $0.value) } }

    /// The number of bytes these lines take on the wire (`name: value\r\n` each).
    public var wireSize: Int {
        wireSize(omitting: { _ in false })
    }

    /// ``wireSize`` of the lines `omits` leaves in.
    public func wireSize(omitting omits: (borrowing Field) -> Bool) -> Int {
        fields.withUnsafeBufferPointer { lines in
            var size = 0
            for index in lines.indices where !omits(lines[index]) {
                size += lines[index].name.utf8.count + lines[index].value.utf8.count + 4
            }
            return size
        }
    }

    /// Writes the lines as `name: value\r\n` to `destination`, which must have room for
    /// ``wireSize`` bytes, and returns the number written. One pass of copies into memory the
    /// caller sized once, rather than a growable buffer's checks for each of four pieces a line.
    public func writeWire(to destination: UnsafeMutableRawBufferPointer) -> Int {
        writeWire(to: destination, omitting: { _ in false })
    }

    /// ``writeWire(to:)`` of the lines `omits` leaves in (``wireSize(omitting:)`` bytes): a
    /// message's fields without, say, its hop-by-hop ones, with no filtered copy of the list.
    public func writeWire(to destination: UnsafeMutableRawBufferPointer, omitting omits: (borrowing Field) -> Bool) -> Int {
        var offset = 0
        func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            precondition(offset + bytes.count <= destination.count, "writeWire: destination too small")
            (destination.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
            offset += bytes.count
        }
        func copyASCII(_ first: UInt8, _ second: UInt8) {
            precondition(offset + 2 <= destination.count, "writeWire: destination too small")
            destination[offset] = first
            destination[offset + 1] = second
            offset += 2
        }
        fields.withUnsafeBufferPointer { lines in
            for index in lines.indices where !omits(lines[index]) {
                // Native strings lend their UTF-8 in place; others (bridged) are copied once.
                if lines[index].name.utf8.withContiguousStorageIfAvailable(copy) == nil {
                    Array(lines[index].name.utf8).withUnsafeBufferPointer(copy)
                }
                copyASCII(UInt8(ascii: ":"), UInt8(ascii: " "))
                if lines[index].value.utf8.withContiguousStorageIfAvailable(copy) == nil {
                    Array(lines[index].value.utf8).withUnsafeBufferPointer(copy)
                }
                copyASCII(UInt8(ascii: "\r"), UInt8(ascii: "\n"))
            }
        }
        return offset
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// The body length `Content-Length` announces: its value when every line has the same one and
    /// it is a number ≥ 0; nil otherwise. Without an array of the values: asked for every response.
    public var contentLength: Int64? {
        guard let first = self["Content-Length"], allValues(for: "Content-Length", equal: first),
            let length = Int64(first), length >= 0
        else { return nil }
        return length
    }

    /// Calls `body` with the value of each line named `name`, in order (no array of them).
    public func forEachValue(named name: String, _ body: (String) -> Void) {
        let key = Field.nameKey(of: name)
        for field in fields where field.isNamed(name, key: key) { body(field.value) }
    }

    /// Whether a line named `name` lists `token` among its comma-separated elements (ASCII
    /// case-insensitive), e.g. `Connection` and `close`. Allocates nothing for short tokens.
    public func listContains(_ name: String, token: String) -> Bool {
        let key = Field.nameKey(of: name)
        for field in fields where field.isNamed(name, key: key) {
            var found = false
            FieldList.forEachToken(in: field.value) { element in
                if !found, element.utf8.count == token.utf8.count, String(element).equalsIgnoringASCIICase(token) {
                    found = true
                }
            }
            if found { return true }
        }
        return false
    }
}

extension String {
    /// ASCII case-insensitive comparison, as header names and tokens need (no Unicode folding).
    @inlinable
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        // Over the contiguous UTF-8 of both (native and small strings have it): no iterators.
        let fast: Bool?? = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in
                for index in 0..<x.count where x[index] != y[index] {
                    let lx = x[index] &- 65 < 26 ? x[index] | 0x20 : x[index]
                    let ly = y[index] &- 65 < 26 ? y[index] | 0x20 : y[index]
                    if lx != ly { return false }
                }
                return true
            }
        }
        if case .some(.some(let equal)) = fast { return equal }
        for (x, y) in zip(a, b) where x != y {
            let lx = x >= 65 && x <= 90 ? x + 32 : x
            let ly = y >= 65 && y <= 90 ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}
