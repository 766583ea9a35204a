import Foundation
import NIOCore

/// Stored responses as last decoded, by variant id, each with the metadata bytes it was decoded
/// from.
///
/// Decoding a record makes strings of every stored field on every hit. A lookup whose record
/// metadata is byte for byte what was decoded before (and whose last access is the same) takes
/// the decoded response from here instead. Validity is checked by content, not by invalidation:
/// a record that was rewritten (a 304 merge), replaced or removed no longer matches its bytes, so
/// nothing stale is ever served from here. The metadata holds the body's length and SHA-256, so
/// equal metadata also means an equal inline body, which is not compared. Bounded; cleared when
/// full.
///
/// A small inline body (at most ``keptBodySize``) is kept too, as a buffer every hit shares
/// (a retain, not an allocation and a copy per hit).
final class DecodedRecords: @unchecked Sendable {
    // @unchecked: `byID` is only touched while holding `lock`.
    // A class: each hit takes its entry out of the dictionary under the lock, and a struct's copy
    // retained (and later released) every reference in it.
    private final class Decoded {
        let metadata: [UInt8]
        let lastAccess: Date?
        let result: Result

        init(metadata: [UInt8], lastAccess: Date?, result: Result) {
            self.metadata = metadata
            self.lastAccess = lastAccess
            self.result = result
        }
    }

    /// What a decoding gives: the response, where its inline body is in the record, and that
    /// body as a buffer when it is small enough to be kept.
    struct Result {
        let response: StoredResponse
        let inlineBody: Range<Int>?
        let body: ByteBuffer?
    }

    /// Entries kept at most (a few KiB each); past it the memo starts empty again.
    static let capacity = 4096
    /// The largest inline body kept with its entry: 4096 entries hold at most 16 MiB of bodies.
    static let keptBodySize = 4096

    private let lock = NSLock()
    private var byID: [UInt64: Decoded] = [:]

    /// The response and inline body range of `record` (variant `id`), decoded or remembered.
    func decode(id: UInt64, record: UnsafeRawBufferPointer, lastAccess: Date?) -> Result? {
        lock.lock()
        let known = byID[id]
        lock.unlock()
        if let known, known.lastAccess == lastAccess,
            record.count == known.metadata.count + (known.result.inlineBody?.count ?? 0),
            known.metadata.withUnsafeBytes({ memcmp($0.baseAddress!, record.baseAddress!, $0.count) == 0 })
        {
            return known.result
        }
        guard let (response, inlineBody) = StoredResponse.decode(record: record, lastAccess: lastAccess) else {
            return nil
        }
        let metadata = Array(record[..<(inlineBody?.lowerBound ?? record.count)])
        var body: ByteBuffer?
        if let inlineBody, inlineBody.count <= Self.keptBodySize {
            body = ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: record[inlineBody]))
        }
        lock.lock()
        if byID.count >= Self.capacity { byID.removeAll(keepingCapacity: true) }
        let result = Result(response: response, inlineBody: inlineBody, body: body)
        byID[id] = Decoded(metadata: metadata, lastAccess: lastAccess, result: result)
        lock.unlock()
        return result
    }

    /// How many decoded responses are remembered (tests).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return byID.count
    }
}
