/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept exactly as received, because a proxy must forward
/// fields in order and some fields (Set-Cookie) cannot be combined.
public struct HeaderFields: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field line.
    public struct Field: Hashable, Sendable {
        /// The field name as received.
        public var name: String
        /// The field value, without leading or trailing whitespace.
        public var value: String

        /// Creates a field line.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Creates an empty list.
    public init() { fields = [] }

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

    /// The first value of the named field, or nil.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value }
        set {
            if let newValue { replaceOrAdd(name: name, value: newValue) } else { remove(name) }
        }
    }

    /// Every value of the named field, in order (one entry per field line).
    public func values(for name: String) -> [String] {
        fields.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }

    /// Whether any line has this name.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Appends a field line.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every line of that name by one line with this value (at the first line's place).
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { $0.name.equalsIgnoringASCIICase(name) }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name.equalsIgnoringASCIICase(name) {
                    fields.remove(at: index)
                } else {
                    index = fields.index(after: index)
                }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Removes every line of that name.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Removes every line whose name satisfies the predicate.
    public mutating func removeAll(where shouldRemove: (Field) -> Bool) {
        fields.removeAll(where: shouldRemove)
    }

    /// The field lines as name/value pairs.
    public var pairs: [(String, String)] { fields.map { ($0.name, $0.value) } }

    /// The number of bytes these lines take on the wire (`name: value\r\n` each).
    public var wireSize: Int {
        fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
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
