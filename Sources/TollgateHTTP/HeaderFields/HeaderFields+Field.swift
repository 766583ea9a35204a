extension HeaderFields {
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
}
