import Foundation

/// What the cache holds of a response it has only in pieces (RFC 9111 §3.3–3.4): 206s, and
/// 200s whose body was cut short, with the same validator. The pieces are written at their
/// offsets into one sparse file as long as the whole body; ``covered`` says which bytes are
/// there. When the pieces cover the whole body they are combined into a complete entry.
public struct PartialContent: Sendable {
    /// The response as a whole: status 200, the newest piece's header fields, Content-Length
    /// the complete length, no Content-Range. For freshness and for the head of a 206.
    public var response: StoredResponse
    /// The length of the whole body.
    public var completeLength: Int64
    /// The bytes present, sorted, merged and non-empty.
    public var covered: [Range<Int64>]
    /// The sparse body file (as long as the whole body; bytes outside ``covered`` are zeros).
    public var path: String
    /// The validator every piece shares (``CacheRules/combiningValidator(of:)``).
    public var validator: String

    /// Whether every byte of `range` is present.
    public func covers(_ range: Range<Int64>) -> Bool {
        covered.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }

    /// How many bytes are present.
    public var presentBytes: Int64 { covered.reduce(Int64(0)) { $0 + Int64($1.count) } }

    /// `ranges` plus `added`, sorted and merged (adjacent ranges join).
    static func merge(_ ranges: [Range<Int64>], _ added: Range<Int64>) -> [Range<Int64>] {
        guard !added.isEmpty else { return ranges }
        var all = (ranges + [added]).sorted { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Int64>] = [all.removeFirst()]
        for range in all {
            let last = merged[merged.count - 1]
            if range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}

/// The LMDB record of a ``PartialContent`` (JSON: written once per piece, never on a hit path).
struct PartialRecord: Codable {
    static let version = 1

    var version = PartialRecord.version
    /// ``StoredResponse``'s binary record of the whole response's metadata.
    var response: Data
    var completeLength: Int64
    /// Half-open ranges as [start, end] pairs.
    var covered: [[Int64]]
    /// The file's name in `bodies/`.
    var file: String
    var validator: String

    var ranges: [Range<Int64>] {
        get { covered.compactMap { $0.count == 2 && $0[0] < $0[1] ? $0[0]..<$0[1] : nil } }
        set { covered = newValue.map { [$0.lowerBound, $0.upperBound] } }
    }

    var storedResponse: StoredResponse? { StoredResponse.decode(record: [UInt8](response)) }

    func encoded() throws -> [UInt8] { [UInt8](try JSONEncoder().encode(self)) }

    static func decode(_ bytes: UnsafeRawBufferPointer) -> PartialRecord? {
        guard let record = try? JSONDecoder().decode(PartialRecord.self, from: Data(bytes)),
            record.version == version
        else { return nil }
        return record
    }
}
