/// An entity tag (RFC 9110 §8.8.3): an opaque validator, strong or weak (`W/"…"`).
///
/// Parsing is strict: the tag must be quoted, `W/` is case-sensitive, and there are no escapes
/// (a backslash is an ordinary `etagc`). Equality compares the tag's bytes and the weak flag.
public struct EntityTag: Sendable, Hashable, LosslessStringConvertible {
    /// How two entity tags are compared (RFC 9110 §8.8.3.2).
    public enum Comparison: Sendable, Hashable {
        /// Both strong, same opaque tag (used by If-Match and ranges).
        case strong
        /// Same opaque tag, either may be weak (used by If-None-Match).
        case weak
    }

    /// Whether the tag is weak (`W/` prefix).
    public let isWeak: Bool
    /// The tag between the quotes, without them.
    public let opaqueTag: String

    /// Creates a tag, or nil when `opaqueTag` has a byte `etagc` does not allow (`"`, space, controls).
    public init?(opaqueTag: String, isWeak: Bool = false) {
        guard opaqueTag.utf8.allSatisfy(Self.isETagByte) else { return nil }
        self.opaqueTag = opaqueTag
        self.isWeak = isWeak
    }

    /// Parses one entity tag, e.g. `"xyzzy"` or `W/"xyzzy"`, allowing surrounding whitespace.
    public init?(_ description: String) {
        let bytes = Array(description.utf8)
        var index = 0
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        guard let tag = Self.parse(bytes, &index) else { return nil }
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        guard index == bytes.count else { return nil }
        self = tag
    }

    /// `"tag"` or `W/"tag"`.
    public var description: String {
        (isWeak ? "W/\"" : "\"") + opaqueTag + "\""
    }

    /// Whether the two tags match under `comparison` (RFC 9110 §8.8.3.2).
    public func matches(_ other: EntityTag, using comparison: Comparison) -> Bool {
        switch comparison {
        case .strong: !isWeak && !other.isWeak && sameOpaqueTag(other)
        case .weak: sameOpaqueTag(other)
        }
    }

    /// Byte equality: String's `==` would also equate canonically equivalent Unicode.
    public static func == (lhs: EntityTag, rhs: EntityTag) -> Bool {
        lhs.isWeak == rhs.isWeak && lhs.sameOpaqueTag(rhs)
    }

    /// Hashes the weak flag and the tag's bytes, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isWeak)
        for byte in opaqueTag.utf8 { hasher.combine(byte) }
    }

    private func sameOpaqueTag(_ other: EntityTag) -> Bool {
        opaqueTag.utf8.elementsEqual(other.opaqueTag.utf8)
    }

    /// Parses `[W/]"etagc*"` at `index`, advancing past it.
    static func parse(_ bytes: [UInt8], _ index: inout Int) -> EntityTag? {
        var i = index
        var weak = false
        if i + 1 < bytes.count, bytes[i] == UInt8(ascii: "W"), bytes[i + 1] == UInt8(ascii: "/") {
            weak = true
            i += 2
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
        let start = i + 1
        guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")),
            bytes[start..<end].allSatisfy(isETagByte)
        else { return nil }
        index = end + 1
        return EntityTag(uncheckedOpaqueTag: String(decoding: bytes[start..<end], as: UTF8.self), isWeak: weak)
    }

    private init(uncheckedOpaqueTag: String, isWeak: Bool) {
        self.opaqueTag = uncheckedOpaqueTag
        self.isWeak = isWeak
    }

    /// `etagc = %x21 / %x23-7E / obs-text`.
    static func isETagByte(_ byte: UInt8) -> Bool {
        byte == 0x21 || (byte >= 0x23 && byte != 0x7F)
    }
}

/// The value of If-Match or If-None-Match (RFC 9110 §13.1.1, §13.1.2): `*` or a list of entity tags.
public enum EntityTagList: Sendable, Hashable, CustomStringConvertible {
    /// `*`: any current representation.
    case any
    /// The listed tags (possibly none, for an empty field value).
    case tags([EntityTag])

    /// Parses every field line of the field, or returns nil when any member is not an entity tag
    /// or `*` is mixed with tags (a recipient may then ignore the field).
    public init?(fieldValues: [String]) {
        var tags: [EntityTag] = []
        var sawStar = false
        for value in fieldValues {
            // Not FieldList.elements: a backslash in an entity tag is a plain byte, not an escape.
            let bytes = Array(value.utf8)
            var index = 0
            while true {
                // Skip OWS and empty list elements.
                while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x2C {
                    index += 1
                }
                if index == bytes.count { break }
                if bytes[index] == UInt8(ascii: "*") {
                    sawStar = true
                    index += 1
                } else if let tag = EntityTag.parse(bytes, &index) {
                    tags.append(tag)
                } else {
                    return nil
                }
                while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
                guard index == bytes.count || bytes[index] == UInt8(ascii: ",") else { return nil }
            }
        }
        if sawStar {
            guard tags.isEmpty else { return nil }
            self = .any
        } else {
            self = .tags(tags)
        }
    }

    /// Whether `tag`, the current representation's entity tag (nil if it has none), matches
    /// under `comparison`: strong for If-Match, weak for If-None-Match.
    ///
    /// `*` matches whenever called: the caller evaluates the condition only when a current
    /// representation exists (without one, If-Match is false and If-None-Match true).
    public func matches(_ tag: EntityTag?, using comparison: EntityTag.Comparison) -> Bool {
        switch self {
        case .any: true
        case .tags(let tags): tag.map { tag in tags.contains { $0.matches(tag, using: comparison) } } ?? false
        }
    }

    /// `*` or the tags joined with `, `.
    public var description: String {
        switch self {
        case .any: "*"
        case .tags(let tags): tags.map(\.description).joined(separator: ", ")
        }
    }
}
