/// One range of a `Range: bytes=…` request field (RFC 9110 §14.1.1), before the
/// representation's length is known.
public enum ByteRangeSpec: Sendable, Hashable, CustomStringConvertible {
    /// `first-last` (`last` nil: open-ended, `first-`).
    case from(Int64, through: Int64?)
    /// `-count`: the last `count` bytes.
    case suffix(Int64)

    /// The bytes this range selects of a representation `length` bytes long, as a half-open
    /// range; nil when it selects none (unsatisfiable, §14.1.1: a first position at or past the
    /// end, or a suffix of 0).
    public func resolve(length: Int64) -> Range<Int64>? {
        switch self {
        case .from(let first, let last):
            guard first < length else { return nil }
            let end = min(last.map { $0 + 1 } ?? length, length)
            return first..<end
        case .suffix(let count):
            guard count > 0, length > 0 else { return nil }
            return max(0, length - count)..<length
        }
    }

    /// The first byte this range asks for when that does not depend on the length (nil: a suffix).
    public var knownStart: Int64? {
        if case .from(let first, _) = self { first } else { nil }
    }

    public var description: String {
        switch self {
        case .from(let first, let last): "\(first)-\(last.map(String.init) ?? "")"
        case .suffix(let count): "-\(count)"
        }
    }
}

/// A parsed `Range` request field: `bytes=` and one or more ranges.
public struct ByteRangeRequest: Sendable, Hashable, CustomStringConvertible {
    /// The ranges, in the order asked for.
    public var ranges: [ByteRangeSpec]

    /// Creates a request for `ranges`.
    public init(_ ranges: [ByteRangeSpec]) { self.ranges = ranges }

    /// Parses a field value; nil when it is not a valid `bytes` range set (another unit, a
    /// `last` before `first`, a number that does not fit): such a field is ignored, as §14.2 allows.
    public init?(fieldValue: String) {
        var text = Substring(fieldValue)
        text = text.drop { $0 == " " || $0 == "\t" }
        guard text.count > 6, text.prefix(6).lowercased() == "bytes=" else { return nil }
        var ranges: [ByteRangeSpec] = []
        for part in text.dropFirst(6).split(separator: ",", omittingEmptySubsequences: true) {
            let piece = part.trimmingCharacters(in: " \t")
            if piece.isEmpty { continue }
            guard let dash = piece.firstIndex(of: "-") else { return nil }
            let first = piece[..<dash]
            let last = piece[piece.index(after: dash)...]
            if first.isEmpty {
                guard let count = Self.number(last) else { return nil }
                ranges.append(.suffix(count))
            } else {
                guard let start = Self.number(first) else { return nil }
                if last.isEmpty {
                    ranges.append(.from(start, through: nil))
                } else {
                    guard let end = Self.number(last), end >= start else { return nil }
                    ranges.append(.from(start, through: end))
                }
            }
        }
        guard !ranges.isEmpty else { return nil }
        self.ranges = ranges
    }

    /// The single range asked for, nil when there are several.
    public var single: ByteRangeSpec? { ranges.count == 1 ? ranges[0] : nil }

    public var description: String { "bytes=" + ranges.map(\.description).joined(separator: ",") }

    /// A non-negative decimal of at most 18 digits (no sign, no spaces).
    static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

/// A `Content-Range` response field (RFC 9110 §14.4): the bytes a 206 carries, or `*/length`
/// in a 416.
public struct ContentRange: Sendable, Hashable, CustomStringConvertible {
    /// The bytes carried, half-open; nil for `bytes */length`.
    public var range: Range<Int64>?
    /// The representation's whole length; nil when the sender did not know it (`/*`).
    public var completeLength: Int64?

    /// Creates a field value.
    public init(range: Range<Int64>?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses `bytes first-last/length`, `bytes first-last/*` or `bytes */length`; nil when
    /// malformed (a last before first, or past the length).
    public init?(fieldValue: String) {
        let text = fieldValue.trimmingCharacters(in: " \t")
        guard text.lowercased().hasPrefix("bytes "), let slash = text.lastIndex(of: "/") else { return nil }
        let rangePart = text[text.index(text.startIndex, offsetBy: 6)..<slash].trimmingCharacters(in: " ")
        let lengthPart = text[text.index(after: slash)...]
        if lengthPart == "*" {
            completeLength = nil
        } else {
            guard let length = ByteRangeRequest.number(lengthPart) else { return nil }
            completeLength = length
        }
        if rangePart == "*" {
            guard completeLength != nil else { return nil }
            range = nil
            return
        }
        guard let dash = rangePart.firstIndex(of: "-"),
            let first = ByteRangeRequest.number(rangePart[..<dash]),
            let last = ByteRangeRequest.number(rangePart[rangePart.index(after: dash)...]),
            last >= first
        else { return nil }
        if let completeLength, last >= completeLength { return nil }
        range = first..<(last + 1)
    }

    public var description: String {
        let length = completeLength.map(String.init) ?? "*"
        guard let range else { return "bytes */" + length }
        return "bytes \(range.lowerBound)-\(range.upperBound - 1)/" + length
    }
}

extension StringProtocol {
    /// The text without the given characters at either end.
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return slice
    }
}
