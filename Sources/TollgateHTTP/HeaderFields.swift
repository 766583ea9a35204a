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
public struct HeaderFields: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field line as strings: what iterating the list gives, and what a list can be made of.
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

        init(name: String, value: String, nameKey: UInt32) {
            self.name = name
            self.value = value
            self.nameKey = nameKey
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
        static func key(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
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
                if bytes.count >= 8 {
                    // The last eight bytes, overlapping the word before: one load, no byte loop.
                    word = bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self) | fold
                } else {
                    var shift: UInt64 = 0
                    while offset < bytes.count {
                        word |= UInt64(bytes[offset] | 0x20) << shift
                        shift += 8
                        offset += 1
                    }
                }
                hash = (hash ^ word) &* 0xC4CE_B9FE_1A85_EC53
                hash ^= hash >> 32
            }
            hash = (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
            return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        }
    }

    /// One field line lent for the length of a call: its name key and the bytes of its name and
    /// value (valid only inside the call that lends it). What the byte-level walks hand out.
    public struct Line {
        /// ``Field/nameKey(of:)`` of the name.
        public let nameKey: UInt32
        /// The name's bytes.
        public let name: UnsafeRawBufferPointer
        /// The value's bytes (no leading or trailing whitespace).
        public let value: UnsafeRawBufferPointer

        /// Whether the name is `other`, ignoring ASCII case.
        public func isNamed(_ other: String) -> Bool {
            HeaderFields.bytes(name, equalIgnoringASCIICase: other)
        }

        /// Whether the name's key is `key` and the name is the bytes `other`, ignoring ASCII case.
        @inline(__always)
        public func isNamed(bytes other: UnsafeRawBufferPointer, key: UInt32) -> Bool {
            nameKey == key && HeaderFields.bytes(name, equalIgnoringASCIICase: other)
        }

        /// Whether the name is `other`, ignoring ASCII case.
        @inline(__always)
        public func isNamed(_ other: HeaderName) -> Bool {
            isNamed(bytes: other.bytes, key: other.key)
        }

        /// The name as a string.
        public var nameString: String { String(decoding: name, as: UTF8.self) }
        /// The value as a string.
        public var valueString: String { String(decoding: value, as: UTF8.self) }

        /// The line as a ``Field``.
        var field: Field { Field(name: nameString, value: valueString, nameKey: nameKey) }
    }

    /// The fixed part of a line in ``bytes``, before its wire form: the name key and the name's
    /// and the value's byte counts, three unaligned `UInt32`s.
    private static let lineHeaderSize = 12

    /// The lines, one after another, each its header (``lineHeaderSize`` bytes) then its wire form
    /// `name: value\r\n`; nothing else. One array, so a list is one allocation and a copy one
    /// retain; lines are found by walking (a head has tens of them), by key first.
    private var bytes: [UInt8]
    /// The number of lines.
    public private(set) var count: Int
    /// One bit per line, ``keyBit(_:)`` of its name key: a bit that is clear means no line has a
    /// name with that key, so asking for an absent field (most lookups: `Transfer-Encoding`,
    /// `Connection`, `Expect` …) walks no line. Kept by every change of the lines; derived
    /// from them, so it takes no part in equality.
    private var keyMask: UInt64 = 0

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
    private static func line(at offset: Int, in raw: UnsafeRawBufferPointer) -> (line: Line, next: Int) {
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
    private func walk(from start: Int = 0, _ body: (Int, Line) throws -> Bool) rethrows {
        try bytes.withUnsafeBytes { raw in
            var offset = start
            while offset < raw.count {
                let (line, next) = Self.line(at: offset, in: raw)
                guard try body(offset, line) else { return }
                offset = next
            }
        }
    }

    /// Calls `body` with each line in order (lent, not copied: see ``Line``).
    public func forEachLine(_ body: (Line) throws -> Void) rethrows {
        try walk { _, line in
            try body(line)
            return true
        }
    }

    /// Whether any line satisfies the predicate (lines lent, not copied).
    public func containsLine(where predicate: (Line) throws -> Bool) rethrows -> Bool {
        var found = false
        try walk { _, line in
            found = try predicate(line)
            return !found
        }
        return found
    }

    /// Whether any line's ``Field/nameKey`` satisfies the predicate. Touches no name, so it is
    /// the cheap first test before comparing names (keys of different names may collide).
    public func containsNameKey(where predicate: (UInt32) -> Bool) -> Bool {
        containsLine { predicate($0.nameKey) }
    }

    /// The offset of the first line named `name` (whose key is `key`) at or after offset `start`.
    private func offset(of name: UnsafeRawBufferPointer, key: UInt32, from start: Int = 0) -> Int? {
        guard mayContainKey(in: Self.keyBit(key)) else { return nil }
        var found: Int?
        walk(from: start) { offset, line in
            if line.isNamed(bytes: name, key: key) { found = offset }
            return found == nil
        }
        return found
    }

    /// Calls `body` with the UTF-8 bytes of a name given as a string and its key. (The lookups
    /// work on bytes, so that a ``HeaderName``'s static text is compared without a retain.)
    @inline(__always)
    private static func withName<R>(_ name: String, _ body: (UnsafeRawBufferPointer, UInt32) throws -> R) rethrows -> R {
        let key = Field.nameKey(of: name)
        if let result = try name.utf8.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0), key) }) {
            return result
        }
        return try Array(name.utf8).withUnsafeBytes { try body($0, key) }
    }

    /// The first value of the named field, or nil.
    public subscript(name: String) -> String? {
        get { Self.withName(name) { firstValue($0, key: $1) } }
        set {
            if let newValue { replaceOrAdd(name: name, value: newValue) } else { remove(name) }
        }
    }

    /// The first value of the named field, or nil (the name's key computed once, not per call).
    public subscript(name: HeaderName) -> String? {
        get { firstValue(name.bytes, key: name.key) }
        set {
            if let newValue { replaceOrAdd(name: name, value: newValue) } else { remove(name) }
        }
    }

    private func firstValue(_ name: UnsafeRawBufferPointer, key: UInt32) -> String? {
        guard mayContainKey(in: Self.keyBit(key)) else { return nil }
        var value: String?
        walk { _, line in
            if line.isNamed(bytes: name, key: key) { value = line.valueString }
            return value == nil
        }
        return value
    }

    /// Every value of the named field, in order (one entry per field line).
    public func values(for name: String) -> [String] {
        Self.withName(name) { values(for: $0, key: $1) }
    }

    /// ``values(for:)-(String)`` by a name whose key is known.
    public func values(for name: HeaderName) -> [String] {
        values(for: name.bytes, key: name.key)
    }

    private func values(for name: UnsafeRawBufferPointer, key: UInt32) -> [String] {
        var values: [String] = []
        forEachValue(named: name, key: key) { values.append($0) }
        return values
    }

    /// Calls `body` with the value of each line named `name`, in order (no array of them).
    public func forEachValue(named name: String, _ body: (String) -> Void) {
        Self.withName(name) { forEachValue(named: $0, key: $1, body) }
    }

    /// ``forEachValue(named:_:)-(String,_)`` by a name whose key is known.
    public func forEachValue(named name: HeaderName, _ body: (String) -> Void) {
        forEachValue(named: name.bytes, key: name.key, body)
    }

    private func forEachValue(named name: UnsafeRawBufferPointer, key: UInt32, _ body: (String) -> Void) {
        guard mayContainKey(in: Self.keyBit(key)) else { return }
        forEachLine { line in
            if line.isNamed(bytes: name, key: key) { body(line.valueString) }
        }
    }

    /// The number of lines with this name.
    public func count(named name: String) -> Int {
        Self.withName(name) { count(named: $0, key: $1) }
    }

    /// ``count(named:)-(String)`` by a name whose key is known.
    public func count(named name: HeaderName) -> Int {
        count(named: name.bytes, key: name.key)
    }

    private func count(named name: UnsafeRawBufferPointer, key: UInt32) -> Int {
        guard mayContainKey(in: Self.keyBit(key)) else { return 0 }
        var count = 0
        forEachLine { line in
            if line.isNamed(bytes: name, key: key) { count += 1 }
        }
        return count
    }

    /// Whether any line has this name.
    public func contains(_ name: String) -> Bool {
        Self.withName(name) { offset(of: $0, key: $1) != nil }
    }

    /// Whether any line has this name (whose key is known).
    public func contains(_ name: HeaderName) -> Bool {
        offset(of: name.bytes, key: name.key) != nil
    }

    /// Whether any line satisfies the predicate (each line made a ``Field`` for it: on hot paths,
    /// ``containsLine(where:)``).
    public func contains(where predicate: (Field) throws -> Bool) rethrows -> Bool {
        try containsLine { line in try predicate(line.field) }
    }

    /// Whether a line named `name` lists `token` among its comma-separated elements (ASCII
    /// case-insensitive), e.g. `Connection` and `close`. Allocates nothing for short tokens.
    public func listContains(_ name: String, token: String) -> Bool {
        Self.withName(name) { listContains($0, key: $1, token: token) }
    }

    /// ``listContains(_:token:)-(String,_)`` by a name whose key is known.
    public func listContains(_ name: HeaderName, token: String) -> Bool {
        listContains(name.bytes, key: name.key, token: token)
    }

    private func listContains(_ name: UnsafeRawBufferPointer, key: UInt32, token: String) -> Bool {
        guard mayContainKey(in: Self.keyBit(key)) else { return false }
        return containsLine { line in
            guard line.isNamed(bytes: name, key: key) else { return false }
            var found = false
            FieldList.forEachToken(in: line.valueString) { element in
                if !found, element.utf8.count == token.utf8.count, String(element).equalsIgnoringASCIICase(token) {
                    found = true
                }
            }
            return found
        }
    }

    /// The body length `Content-Length` announces: its value when every line has the same one and
    /// it is a decimal number (`1*DIGIT`, RFC 9110 §8.6: no sign, no spaces, at most 18 digits);
    /// nil otherwise. Read from the lines' bytes, no string made: asked for every response.
    public var contentLength: Int64? {
        let name = HeaderName.contentLength
        guard mayContainKey(in: Self.keyBit(name.key)) else { return nil }
        var first: UnsafeRawBufferPointer?
        var agree = true
        var length: Int64?
        walk { _, line in
            guard line.isNamed(bytes: name.bytes, key: name.key) else { return true }
            if let first {
                agree = line.value.elementsEqual(first)
            } else {
                first = line.value
                length = Self.decimal(line.value)
            }
            return agree
        }
        return agree ? length : nil
    }

    /// The value of `1*DIGIT` bytes, at most 18 of them (so it cannot overflow); nil otherwise.
    private static func decimal(_ digits: UnsafeRawBufferPointer) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in digits {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int64(digit)
        }
        return value
    }

    // MARK: changing lines

    /// Whether the two lists share one storage (then they are equal; equal lists need not share).
    /// A list stays unchanged while its storage is shared, so a holder of one list can tell that
    /// another is the very same by this, without comparing lines.
    public func sharesStorage(with other: HeaderFields) -> Bool {
        count == other.count
            && bytes.withUnsafeBufferPointer { mine in
                other.bytes.withUnsafeBufferPointer { theirs in mine.baseAddress == theirs.baseAddress }
            }
    }

    /// Appends every line of `other`, in order (one copy of its bytes).
    public mutating func append(contentsOf other: HeaderFields) {
        guard other.count > 0 else { return }
        bytes.append(contentsOf: other.bytes)
        count += other.count
        keyMask |= other.keyMask
    }

    /// Makes room for `capacity` lines in all (of a usual length), so that adding lines up to
    /// it copies nothing.
    public mutating func reserveCapacity(_ capacity: Int) {
        bytes.reserveCapacity(bytes.count + Swift.max(0, capacity - count) * Self.usualLineSize)
    }

    /// Room reserved per line to come: most lines are shorter.
    private static let usualLineSize = 64

    /// Removes every line, keeping the storage when `keepingCapacity` (a list used again for the
    /// next message's lines then allocates nothing).
    public mutating func removeAll(keepingCapacity: Bool = false) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
        count = 0
        keyMask = 0
    }

    /// Appends a field line.
    public mutating func add(name: String, value: String) {
        Self.withName(name) { add(name: $0, value: value, key: $1) }
    }

    /// Appends a field line with a name whose key is known.
    public mutating func add(name: HeaderName, value: String) {
        add(name: name.bytes, value: value, key: name.key)
    }

    private mutating func add(name: UnsafeRawBufferPointer, value: String, key: UInt32) {
        // The string's own bytes where it has them (native and small strings do): a copy into
        // a `var` for `withUTF8` cost a retain and a release.
        if value.utf8.withContiguousStorageIfAvailable({ add(name: name, value: UnsafeRawBufferPointer($0), key: key) }) != nil {
            return
        }
        Array(value.utf8).withUnsafeBytes { add(name: name, value: $0, key: key) }
    }

    /// Appends a field line given as bytes (a parser's or a stored record's).
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        add(name: name, value: value, key: Field.key(name))
    }

    private mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, key: UInt32) {
        let needed = bytes.count + Self.lineHeaderSize + name.count + value.count + 4
        if bytes.capacity < needed {
            // Growth from empty would go 16, 32, 64 … bytes: a head's lines need a few hundred.
            bytes.reserveCapacity(Swift.max(needed, 2 * bytes.capacity, 256))
        }
        // Typed buffers: appending a raw buffer goes byte by byte, a typed one is one copy.
        // In the machine's byte order: the bytes never leave memory (``line(at:in:)`` reads them).
        let header = (key, UInt32(name.count), UInt32(value.count))
        withUnsafeBytes(of: header) { raw in raw.withMemoryRebound(to: UInt8.self) { bytes.append(contentsOf: $0) } }
        bytes.append(contentsOf: name.assumingMemoryBound(to: UInt8.self))
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: value.assumingMemoryBound(to: UInt8.self))
        bytes.append(UInt8(ascii: "\r"))
        bytes.append(UInt8(ascii: "\n"))
        count += 1
        keyMask |= Self.keyBit(key)
    }

    /// Replaces every line of that name by one line with this value (at the first line's place).
    public mutating func replaceOrAdd(name: String, value: String) {
        Self.withName(name) { replaceOrAdd(name: $0, key: $1, value: value) }
    }

    /// ``replaceOrAdd(name:value:)-(String,_)`` by a name whose key is known.
    public mutating func replaceOrAdd(name: HeaderName, value: String) {
        replaceOrAdd(name: name.bytes, key: name.key, value: value)
    }

    private mutating func replaceOrAdd(name: UnsafeRawBufferPointer, key: UInt32, value: String) {
        guard let first = offset(of: name, key: key) else {
            add(name: name, value: value, key: key)
            return
        }
        let (nameCount, oldCount) = bytes.withUnsafeBytes { raw in
            (
                Int(raw.loadUnaligned(fromByteOffset: first + 4, as: UInt32.self)),
                Int(raw.loadUnaligned(fromByteOffset: first + 8, as: UInt32.self))
            )
        }
        let next = first + Self.lineHeaderSize + nameCount + oldCount + 4
        if offset(of: name, key: key, from: next) != nil {
            removeLines(from: next) { $0.isNamed(bytes: name, key: key) }
        }
        // The new value in place of the old; later lines are found by walking, so nothing else moves.
        var replacement = value
        replacement.withUTF8 { newValue in
            let valueStart = first + Self.lineHeaderSize + nameCount + 2
            bytes.replaceSubrange(valueStart..<valueStart + oldCount, with: newValue)
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt32(newValue.count), toByteOffset: first + 8, as: UInt32.self)
            }
        }
    }

    /// Removes every line of that name.
    public mutating func remove(_ name: String) {
        Self.withName(name) { remove($0, key: $1) }
    }

    /// Removes every line of that name (whose key is known).
    public mutating func remove(_ name: HeaderName) {
        remove(name.bytes, key: name.key)
    }

    /// Removes every line of that name and returns the first one's value (one walk where a
    /// lookup and a removal took two).
    public mutating func take(_ name: HeaderName) -> String? {
        guard let first = offset(of: name.bytes, key: name.key) else { return nil }
        let value = bytes.withUnsafeBytes { raw in Self.line(at: first, in: raw).line.valueString }
        removeLines(from: first) { $0.isNamed(bytes: name.bytes, key: name.key) }
        return value
    }

    private mutating func remove(_ name: UnsafeRawBufferPointer, key: UInt32) {
        guard let first = offset(of: name, key: key) else { return }
        removeLines(from: first) { $0.isNamed(bytes: name, key: key) }
    }

    /// Removes every line that satisfies the predicate (lines lent, not copied).
    public mutating func removeLines(where shouldRemove: (Line) -> Bool) {
        var first: Int?
        walk { offset, line in
            if shouldRemove(line) { first = offset }
            return first == nil
        }
        guard let first else { return }
        removeLines(from: first, where: shouldRemove)
    }

    /// Removes every line that satisfies the predicate (each line made a ``Field`` for it).
    public mutating func removeAll(where shouldRemove: (Field) -> Bool) {
        removeLines { line in shouldRemove(line.field) }
    }

    /// Removes the lines from byte `start` on that satisfy the predicate, in place: the kept
    /// lines move down over the removed ones (no new array when this one is not shared).
    private mutating func removeLines(from start: Int, where shouldRemove: (Line) -> Bool) {
        var kept = start
        var removed = 0
        bytes.withUnsafeMutableBytes { raw in
            var offset = start
            while offset < raw.count {
                let (line, next) = Self.line(at: offset, in: UnsafeRawBufferPointer(raw))
                if shouldRemove(line) {
                    removed += 1
                } else {
                    if offset != kept {
                        (raw.baseAddress! + kept).copyMemory(from: raw.baseAddress! + offset, byteCount: next - offset)
                    }
                    kept += next - offset
                }
                offset = next
            }
        }
        bytes.removeLast(bytes.count - kept)
        count -= removed
        if removed > 0 {
            // The removed lines' bits may be shared with kept lines: rebuilt from the keys.
            var mask: UInt64 = 0
            forEachLine { mask |= Self.keyBit($0.nameKey) }
            keyMask = mask
        }
    }

    // MARK: wire form

    /// The field lines as name/value pairs.
    public var pairs: [(String, String)] { map { ($0.name, $0.value) } }

    /// The number of bytes these lines take on the wire (`name: value\r\n` each).
    public var wireSize: Int { bytes.count - count * Self.lineHeaderSize }

    /// ``wireSize`` of the lines `omits` leaves in.
    public func wireSize(omitting omits: (Line) -> Bool) -> Int {
        var size = 0
        forEachLine { line in
            if !omits(line) { size += line.name.count + line.value.count + 4 }
        }
        return size
    }

    /// Writes the lines as `name: value\r\n` to `destination`, which must have room for
    /// ``wireSize`` bytes, and returns the number written: one copy per line.
    public func writeWire(to destination: UnsafeMutableRawBufferPointer) -> Int {
        writeWire(to: destination, omitting: { _ in false })
    }

    /// ``writeWire(to:)`` of the lines `omits` leaves in (``wireSize(omitting:)`` bytes): a
    /// message's fields without, say, its hop-by-hop ones, with no filtered copy of the list.
    public func writeWire(to destination: UnsafeMutableRawBufferPointer, omitting omits: (Line) -> Bool) -> Int {
        var offset = 0
        forEachLine { line in
            guard !omits(line) else { return }
            // The wire form runs from the name to the value's CRLF.
            let count = line.name.count + line.value.count + 4
            precondition(offset + count <= destination.count, "writeWire: destination too small")
            (destination.baseAddress! + offset).copyMemory(from: line.name.baseAddress!, byteCount: count)
            offset += count
        }
        return offset
    }

    // MARK: Sequence, Hashable, description

    /// Iterates the lines as ``Field`` values (strings made for each).
    public struct Iterator: IteratorProtocol {
        let fields: HeaderFields
        var offset = 0

        public mutating func next() -> Field? {
            guard offset < fields.bytes.count else { return nil }
            return fields.bytes.withUnsafeBytes { raw in
                let (line, next) = HeaderFields.line(at: offset, in: raw)
                offset = next
                return line.field
            }
        }
    }

    public func makeIterator() -> Iterator { Iterator(fields: self) }

    public var underestimatedCount: Int { count }

    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool {
        // The bytes are exactly the lines (header and wire form), so equal lines mean equal arrays.
        lhs.count == rhs.count && lhs.bytes == rhs.bytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public var description: String {
        map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// Whether `bytes` spell `text`, ignoring ASCII case.
    static func bytes(_ bytes: UnsafeRawBufferPointer, equalIgnoringASCIICase text: String) -> Bool {
        if let equal = text.utf8.withContiguousStorageIfAvailable({ Self.bytes(bytes, equalIgnoringASCIICase: UnsafeRawBufferPointer($0)) }) {
            return equal
        }
        return Array(text.utf8).withUnsafeBytes { Self.bytes(bytes, equalIgnoringASCIICase: $0) }
    }

    /// Whether two byte strings are equal, ignoring ASCII case.
    static func bytes(_ bytes: UnsafeRawBufferPointer, equalIgnoringASCIICase other: UnsafeRawBufferPointer) -> Bool {
        guard other.count == bytes.count else { return false }
        for index in 0..<other.count where other[index] != bytes[index] {
            let x = other[index] &- 65 < 26 ? other[index] | 0x20 : other[index]
            let y = bytes[index] &- 65 < 26 ? bytes[index] | 0x20 : bytes[index]
            if x != y { return false }
        }
        return true
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
