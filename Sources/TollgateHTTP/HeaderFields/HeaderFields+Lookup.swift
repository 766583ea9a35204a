extension HeaderFields {
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
    func offset(of name: UnsafeRawBufferPointer, key: UInt32, from start: Int = 0) -> Int? {
        guard mayContainKey(in: Self.keyBit(key)) else { return nil }
        var found: Int?
        walk(key: key, from: start) { offset, line in
            if line.isNamed(bytes: name, key: key) { found = offset }
            return found == nil
        }
        return found
    }

    /// Calls `body` with the UTF-8 bytes of a name given as a string and its key. (The lookups
    /// work on bytes, so that a ``HeaderName``'s static text is compared without a retain.)
    @inline(__always)
    static func withName<R>(_ name: String, _ body: (UnsafeRawBufferPointer, UInt32) throws -> R) rethrows -> R {
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
        walk(key: key) { _, line in
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
        forEachValueBytes(named: name, key: key) { body(String(decoding: $0, as: UTF8.self)) }
    }

    /// Calls `body` with the bytes of the value of each line named `name`, in order: for a
    /// value read in place, no string made (valid only during the call).
    public func forEachValueBytes(named name: HeaderName, _ body: (UnsafeRawBufferPointer) -> Void) {
        forEachValueBytes(named: name.bytes, key: name.key, body)
    }

    private func forEachValueBytes(named name: UnsafeRawBufferPointer, key: UInt32, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard mayContainKey(in: Self.keyBit(key)) else { return }
        walk(key: key) { _, line in
            if line.isNamed(bytes: name, key: key) { body(line.value) }
            return true
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
        walk(key: key) { _, line in
            if line.isNamed(bytes: name, key: key) { count += 1 }
            return true
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
            line.isNamed(bytes: name, key: key) && Self.bytes(list: line.value, containsToken: token)
        }
    }

    /// Whether the comma-separated list `value` has an element (trimmed of spaces and tabs) that
    /// is `token`, ignoring ASCII case. Over the value's bytes in place: a string of the value
    /// and of each element cost about a thousand instructions for every response's Connection.
    static func bytes(list value: UnsafeRawBufferPointer, containsToken token: String) -> Bool {
        var found = false
        FieldList.forEachTokenRange(in: value) { range in
            found = range.count == token.utf8.count
                && bytes(UnsafeRawBufferPointer(rebasing: value[range]), equalIgnoringASCIICase: token)
            return !found
        }
        return found
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
        walk(key: name.key) { _, line in
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
}
