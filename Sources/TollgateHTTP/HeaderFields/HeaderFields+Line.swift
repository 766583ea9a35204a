extension HeaderFields {
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
}
