import Foundation
public import NIOCore
public import TollgateHTTP

/// Splits a `multipart/x-mixed-replace` body into its parts as the bytes arrive: the head of each
/// part (its header fields), then its body in pieces. A pure machine: bytes in, events out.
///
/// The body is `--BOUNDARY CRLF fields CRLF CRLF body CRLF --BOUNDARY …`, ended by
/// `--BOUNDARY--` (RFC 2046 §5.1.1; the server push form). What comes before the first boundary
/// and after the last is ignored. A piece of body is handed out as soon as it cannot be the start
/// of the next delimiter, so a part's bytes are not held back for the whole part.
public struct MultipartReplaceParser: Sendable {
    /// What the parser found.
    public enum Event: Hashable, Sendable {
        /// A part begins, with these header fields.
        case part(HeaderFields)
        /// Bytes of the current part's body.
        case data(ByteBuffer)
    }

    private enum State {
        case preamble
        case boundaryLine
        case headers
        case body
        case done
    }

    /// `--BOUNDARY`.
    private let delimiter: [UInt8]
    private var state = State.preamble
    private var pending: [UInt8] = []
    /// The longest head a part may have before the rest is taken for body.
    static let maximumHeadBytes = 16 * 1024

    /// A parser for parts separated by `boundary` (the `boundary` parameter of the Content-Type).
    public init(boundary: String) {
        delimiter = Array("--\(boundary)".utf8)
    }

    /// The boundary of a `multipart/x-mixed-replace` Content-Type value, or nil for any other type.
    public static func boundary(ofContentType value: String) -> String? {
        let parameters = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parameters.first?.lowercased() == "multipart/x-mixed-replace" else { return nil }
        for parameter in parameters.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// Takes the next bytes of the body; returns what they complete.
    public mutating func feed(_ bytes: ByteBuffer) -> [Event] {
        pending.append(contentsOf: bytes.readableBytesView)
        var events: [Event] = []
        while step(into: &events) {}
        return events
    }

    /// Runs one step; false when more bytes are needed (or the parts are over).
    private mutating func step(into events: inout [Event]) -> Bool {
        switch state {
        case .preamble:
            guard let found = find(delimiter, from: 0) else {
                // Keep only what could be the start of the first delimiter.
                if pending.count > delimiter.count { pending.removeFirst(pending.count - delimiter.count) }
                return false
            }
            pending.removeFirst(found + delimiter.count)
            state = .boundaryLine
            return true
        case .boundaryLine:
            // After a delimiter: "--" ends the parts; otherwise the rest of the line is skipped.
            if pending.count >= 2, pending[0] == 0x2D, pending[1] == 0x2D {
                state = .done
                pending = []
                return false
            }
            guard let end = find([0x0D, 0x0A], from: 0) else { return false }
            pending.removeFirst(end + 2)
            state = .headers
            return true
        case .headers:
            let head: [UInt8]
            if pending.starts(with: [0x0D, 0x0A]) {
                head = []
                pending.removeFirst(2)
            } else if let end = find([0x0D, 0x0A, 0x0D, 0x0A], from: 0) {
                head = Array(pending[..<end])
                pending.removeFirst(end + 4)
            } else if pending.count > Self.maximumHeadBytes {
                head = []
            } else {
                return false
            }
            events.append(.part(Self.fields(head)))
            state = .body
            return true
        case .body:
            let next = [0x0D, 0x0A] + delimiter
            if let found = find(next, from: 0) {
                if found > 0 { events.append(.data(ByteBuffer(bytes: pending[..<found]))) }
                pending.removeFirst(found + next.count)
                state = .boundaryLine
                return true
            }
            let safe = pending.count - (next.count - 1)
            if safe > 0 {
                events.append(.data(ByteBuffer(bytes: pending[..<safe])))
                pending.removeFirst(safe)
            }
            return false
        case .done:
            pending = []
            return false
        }
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard pending.count >= needle.count + start else { return nil }
        var index = start
        while index + needle.count <= pending.count {
            if pending[index] == needle[0], pending[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    private static func fields(_ head: [UInt8]) -> HeaderFields {
        var fields = HeaderFields()
        for line in String(decoding: head, as: UTF8.self).split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { continue }
            fields.add(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return fields
    }
}
