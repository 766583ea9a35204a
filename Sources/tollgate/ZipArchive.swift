import CZlib
import Foundation

/// The files of a zip archive (PKWARE APPNOTE), read from its central directory: what Go's module
/// hash covers. Entries stored (method 0) or deflated (method 8, inflated by zlib); ZIP64
/// archives (over 65,535 entries or 4 GiB) are refused — a Go module zip is at most 500 MB.
struct ZipArchive {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One file: its name as the archive has it, and where its data starts.
    struct Entry {
        var name: String
        var method: UInt16
        var compressedSize: Int
        var uncompressedSize: Int
        var localHeaderOffset: Int
    }

    let bytes: UnsafeRawBufferPointer
    let entries: [Entry]

    /// Reads the central directory of the archive in `bytes` (which must stay valid while this is used).
    init(_ bytes: UnsafeRawBufferPointer) throws {
        self.bytes = bytes
        func u16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        func u32(_ offset: Int) -> Int { u16(offset) | u16(offset + 2) << 16 }
        // The end of central directory record: 22 bytes and a comment of at most 65,535.
        guard bytes.count >= 22 else { throw Failure(description: "not a zip archive (\(bytes.count) bytes)") }
        var end = bytes.count - 22
        let lowest = max(0, bytes.count - 22 - 65_535)
        while end >= lowest, u32(end) != 0x0605_4b50 { end -= 1 }
        guard end >= lowest else { throw Failure(description: "not a zip archive (no end of central directory)") }
        let count = u16(end + 10)
        var offset = u32(end + 16)
        guard count != 0xFFFF, offset != 0xFFFF_FFFF else { throw Failure(description: "a ZIP64 archive, which is not read") }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            guard offset + 46 <= bytes.count, u32(offset) == 0x0201_4b50 else {
                throw Failure(description: "the central directory is damaged at byte \(offset)")
            }
            let nameLength = u16(offset + 28)
            let extraLength = u16(offset + 30)
            let commentLength = u16(offset + 32)
            guard offset + 46 + nameLength <= bytes.count else { throw Failure(description: "a name runs past the end") }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(offset + 46)..<(offset + 46 + nameLength)]), as: UTF8.self)
            entries.append(
                Entry(
                    name: name, method: UInt16(u16(offset + 10)), compressedSize: u32(offset + 20),
                    uncompressedSize: u32(offset + 24), localHeaderOffset: u32(offset + 42)
                )
            )
            offset += 46 + nameLength + extraLength + commentLength
        }
        self.entries = entries
    }

    /// Passes the contents of `entry` to `body`, a piece at a time.
    func read(_ entry: Entry, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        func u16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        let header = entry.localHeaderOffset
        guard header + 30 <= bytes.count, u16(header) | u16(header + 2) << 16 == 0x0403_4b50 else {
            throw Failure(description: "\(entry.name): no local header at byte \(header)")
        }
        let start = header + 30 + u16(header + 26) + u16(header + 28)
        guard start + entry.compressedSize <= bytes.count else { throw Failure(description: "\(entry.name): its data runs past the end") }
        let data = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + entry.compressedSize)])
        switch entry.method {
        case 0:
            body(data)
        case 8:
            try Self.inflate(data, name: entry.name, expected: entry.uncompressedSize, body)
        default:
            throw Failure(description: "\(entry.name): compression method \(entry.method), which is not read")
        }
    }

    /// Raw deflate data inflated, a piece at a time.
    private static func inflate(
        _ data: UnsafeRawBufferPointer, name: String, expected: Int, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws {
        var stream = z_stream()
        guard tollgate_inflate_init_raw(&stream) == Z_OK else { throw Failure(description: "\(name): zlib would not start") }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: 64 * 1024)
        var produced = 0
        stream.next_in = UnsafeMutablePointer(mutating: data.bindMemory(to: Bytef.self).baseAddress)
        stream.avail_in = uInt(data.count)
        while true {
            let status = output.withUnsafeMutableBytes { buffer -> Int32 in
                stream.next_out = buffer.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(buffer.count)
                return CZlib.inflate(&stream, Z_NO_FLUSH)
            }
            let count = output.count - Int(stream.avail_out)
            produced += count
            // More than the directory says: stop now rather than hash a decompression bomb to its end.
            guard produced <= expected else { throw Failure(description: "\(name): inflates past the \(expected) bytes the directory says") }
            output.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            if status == Z_STREAM_END { break }
            guard status == Z_OK else { throw Failure(description: "\(name): its deflated data is damaged (zlib \(status))") }
            if count == 0, stream.avail_in == 0 { throw Failure(description: "\(name): its deflated data ends early") }
        }
        guard produced == expected else { throw Failure(description: "\(name): \(produced) bytes inflated, the directory says \(expected)") }
    }
}
