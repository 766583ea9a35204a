extension HeaderFields {
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
