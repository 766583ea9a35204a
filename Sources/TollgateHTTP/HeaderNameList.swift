/// A few field names asked about together (the conditional request fields, the X-Forwarded-*
/// set …), with the ``HeaderFields/keyBit(_:)``s of their keys ORed into one mask: a list of
/// lines whose key mask shares no bit with it has none of them, without a walk.
public struct HeaderNameList: Sendable {
    /// The names, in the order given.
    public let names: [HeaderName]
    /// The ``HeaderFields/keyBit(_:)`` of every name's key, ORed.
    public let keyMask: UInt64

    /// A list of these names. Make constants of these, not one per lookup.
    public init(_ names: [HeaderName]) {
        self.names = names
        self.keyMask = names.reduce(0) { $0 | HeaderFields.keyBit($1.key) }
    }

    /// Whether `line` is named one of the names (its key's bit first, then the names).
    @inline(__always)
    public func contains(_ line: HeaderFields.Line) -> Bool {
        keyMask & HeaderFields.keyBit(line.nameKey) != 0 && names.contains { line.isNamed($0) }
    }
}

extension HeaderFields {
    /// Whether any line is named one of `list`'s names: no walk when the key masks share no bit.
    public func containsAny(of list: HeaderNameList) -> Bool {
        // A closure, not `list.contains` itself: a partially applied method allocates its context.
        mayContainKey(in: list.keyMask) && containsLine { list.contains($0) }
    }
}
