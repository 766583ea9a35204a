extension HeaderFields {
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
}
