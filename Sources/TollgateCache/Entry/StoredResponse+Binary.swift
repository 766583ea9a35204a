import Foundation
import TollgateHTTP

/// The LMDB value layout of a variant record, version 1 or 2, all integers little-endian:
///
/// ```
/// u8 version (1, 2) · u8 flags (bit 0: body inline) · u16 status
/// f64 request time · f64 response time · f64 stored at · f64 last access   (seconds since 1970)
/// [f64 stale since]                                           version 2: marked by a soft purge
/// u64 body length · 32 bytes SHA-256
/// str key · str url · str reason
/// varint n · n × (str name · str value)                       header fields
/// varint n · n × (str name · u8 present · [str value])        varying request fields
/// [str file name]                                             when the body is not inline
/// body bytes                                                  when the body is inline
/// ```
///
/// `str` is a varint byte count and UTF-8 bytes. A hand-rolled format rather than JSON
/// because it is decoded on every hit: one pass, no intermediate objects. A record of an
/// unknown version fails to decode and is treated as absent (and swept by `verify`). Version 2 is
/// written only for a response a soft purge marked, so a build that reads version 1 alone finds
/// such a response absent (purged, to it) and every other as before.
extension StoredResponse {
    /// The record version of a response no soft purge marked.
    static let recordVersion: UInt8 = 1
    /// The record version of a response a soft purge marked (``staleSince``).
    static let markedRecordVersion: UInt8 = 2

    /// The record: metadata, then `inlineBody` when the location is inline.
    func encodedRecord(inlineBody: UnsafeRawBufferPointer? = nil) -> [UInt8] {
        var out = BinaryWriter()
        out.reserve(256 + headerFields.wireSize + (inlineBody?.count ?? 0))
        out.byte(staleSince == nil ? Self.recordVersion : Self.markedRecordVersion)
        out.byte(bodyLocation == .inline ? 1 : 0)
        out.u16(UInt16(clamping: status))
        out.date(requestTime)
        out.date(responseTime)
        out.date(storedAt)
        out.date(lastAccess)
        if let staleSince { out.date(staleSince) }
        out.u64(UInt64(bodyLength))
        out.bytes(bodyDigest.count == SHA256.digestCount ? bodyDigest : [UInt8](repeating: 0, count: 32))
        out.string(key.description)
        out.string(url)
        out.string(reason)
        out.varint(headerFields.count)
        headerFields.forEachLine { line in
            out.string(bytes: line.name)
            out.string(bytes: line.value)
        }
        out.varint(varyingRequestFields.count)
        for field in varyingRequestFields {
            out.string(field.name)
            if let value = field.value {
                out.byte(1)
                out.string(value)
            } else {
                out.byte(0)
            }
        }
        if case .file(let name) = bodyLocation { out.string(name) }
        if let inlineBody { out.bytes(inlineBody) }
        return out.buffer
    }

    /// Decodes a record, returning the metadata and the byte range of an inline body
    /// within `record`; nil when the record is not a valid version-1 or version-2 record.
    static func decode(
        record: UnsafeRawBufferPointer,
        lastAccess accessOverride: Date? = nil
    ) -> (response: StoredResponse, inlineBody: Range<Int>?)? {
        var input = BinaryReader(record)
        guard let version = input.byte(), version == recordVersion || version == markedRecordVersion, let flags = input.byte(),
            let status = input.u16(), let requestTime = input.date(), let responseTime = input.date(), let storedAt = input.date(),
            let lastAccess = input.date()
        else { return nil }
        var staleSince: Date?
        if version == markedRecordVersion {
            guard let marked = input.date() else { return nil }
            staleSince = marked
        }
        guard let bodyLength = input.u64(), let digest = input.bytes(SHA256.digestCount),
            let keyText = input.string(), let key = CacheKey(storedDescription: keyText), let url = input.string(),
            let reason = input.string(), let headerCount = input.varint()
        else { return nil }
        var headerFields = HeaderFields()
        // At most what the rest of the record can hold (a field is at least its two lengths): a
        // damaged count must not reserve gigabytes (found by FuzzStoredEntry).
        headerFields.reserveCapacity(min(headerCount, input.remainingCount / 2))
        for _ in 0..<headerCount {
            guard let name = input.stringBytes(), let value = input.stringBytes() else { return nil }
            headerFields.add(name: name, value: value)
        }
        guard let varyCount = input.varint() else { return nil }
        var varying: [VaryingField] = []
        for _ in 0..<varyCount {
            guard let name = input.string(), let present = input.byte() else { return nil }
            var value: String?
            if present == 1 {
                guard let text = input.string() else { return nil }
                value = text
            }
            varying.append(VaryingField(name: name, value: value))
        }
        let inline = flags & 1 == 1
        var location = BodyLocation.inline
        if !inline {
            guard let name = input.string() else { return nil }
            location = .file(name)
        }
        guard bodyLength <= UInt64(Int64.max) else { return nil }
        let bodyRange = inline ? input.offset..<record.count : nil
        if let bodyRange, bodyRange.count != Int(bodyLength) { return nil }
        let response = StoredResponse(
            key: key,
            url: url,
            status: Int(status),
            reason: reason,
            headerFields: headerFields,
            requestTime: requestTime,
            responseTime: responseTime,
            varyingRequestFields: varying,
            bodyLength: Int64(bodyLength),
            bodyDigest: digest,
            bodyLocation: location,
            storedAt: storedAt,
            lastAccess: accessOverride ?? lastAccess,
            staleSince: staleSince
        )
        return (response, bodyRange)
    }

    /// Decodes a record held in an array (tests, tools).
    public static func decode(record: [UInt8]) -> StoredResponse? {
        record.withUnsafeBytes { decode(record: $0)?.response }
    }

    /// The record bytes for this metadata with no body, e.g. to compare encodings.
    public func encodedMetadata() -> [UInt8] {
        encodedRecord(inlineBody: nil)
    }
}

/// Appends little-endian fields to a byte array.
struct BinaryWriter {
    private(set) var buffer: [UInt8] = []

    mutating func reserve(_ count: Int) { buffer.reserveCapacity(count) }
    mutating func byte(_ value: UInt8) { buffer.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) } }
    mutating func date(_ value: Date) { u64(value.timeIntervalSince1970.bitPattern) }
    mutating func bytes(_ value: [UInt8]) { buffer.append(contentsOf: value) }
    mutating func bytes(_ value: UnsafeRawBufferPointer) { buffer.append(contentsOf: value) }

    mutating func varint(_ value: Int) {
        var rest = UInt64(value)
        while rest >= 0x80 {
            buffer.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        buffer.append(UInt8(rest))
    }

    mutating func string(bytes value: UnsafeRawBufferPointer) {
        varint(value.count)
        buffer.append(contentsOf: value)
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(utf8.count)
            buffer.append(contentsOf: utf8)
        }
    }
}

/// Reads what `BinaryWriter` wrote; every read returns nil past the end.
struct BinaryReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The bytes not read yet.
    var remainingCount: Int { bytes.count - offset }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16? {
        guard bytes.count - offset >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    mutating func u64() -> UInt64? {
        guard bytes.count - offset >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    mutating func date() -> Date? {
        guard let bits = u64() else { return nil }
        let seconds = Double(bitPattern: bits)
        return seconds.isFinite ? Date(timeIntervalSince1970: seconds) : nil
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func varint() -> Int? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = byte() {
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result <= UInt64(Int32.max) ? Int(result) : nil }
            shift += 7
            if shift > 35 { return nil }
        }
        return nil
    }

    /// The bytes of a `str`, lent from the record.
    mutating func stringBytes() -> UnsafeRawBufferPointer? {
        guard let count = varint(), bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func string() -> String? {
        guard let count = varint(), bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]), as: UTF8.self)
    }
}
