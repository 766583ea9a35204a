extension HeaderFields {
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
        let lineCount = Self.lineHeaderSize + name.count + value.count + 4
        let needed = bytes.count + lineCount
        if bytes.capacity < needed {
            // Growth from empty would go 16, 32, 64 … bytes: a head's lines need a few hundred.
            bytes.reserveCapacity(Swift.max(needed, 2 * bytes.capacity, 256))
        }
        // The line is put together once and appended in one copy: six appends each checked the
        // array's uniqueness and capacity. In the machine's byte order: the bytes never leave
        // memory (``line(at:in:)`` reads them).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: lineCount) { line in
            let raw = UnsafeMutableRawBufferPointer(line)
            raw.storeBytes(of: key, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(name.count), toByteOffset: 4, as: UInt32.self)
            raw.storeBytes(of: UInt32(value.count), toByteOffset: 8, as: UInt32.self)
            var offset = Self.lineHeaderSize
            UnsafeMutableRawBufferPointer(rebasing: raw[offset...]).copyMemory(from: name)
            offset += name.count
            raw[offset] = UInt8(ascii: ":")
            raw[offset + 1] = UInt8(ascii: " ")
            offset += 2
            UnsafeMutableRawBufferPointer(rebasing: raw[offset...]).copyMemory(from: value)
            offset += value.count
            raw[offset] = UInt8(ascii: "\r")
            raw[offset + 1] = UInt8(ascii: "\n")
            bytes.append(contentsOf: UnsafeBufferPointer(line))
        }
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
}
