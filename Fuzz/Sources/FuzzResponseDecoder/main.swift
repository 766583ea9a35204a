// The origin response decoder (ResponseDecoder: status line, lenient field lines with obs-fold,
// interim responses, length, chunked and until-close bodies, 101) fed arbitrary bytes. The first
// byte's low bit says whether the request was a HEAD; the rest is what the origin sent.
//
// Invariants:
// - the same bytes give the same events however they arrive (all at once, byte by byte up to
//   1 KiB, in pieces, cut in two at every point or, in longer inputs, at 24), body pieces merged,
//   the end of input included;
// - a response whose `Content-Length` the decoder accepted carries exactly that many body bytes
//   (unless it has no body: HEAD, 1xx, 204, 304, or `Transfer-Encoding` decides);
// - a response with both `Transfer-Encoding` and `Content-Length` never leaves the connection
//   reusable (it may be read differently downstream);
// - nothing follows a failure; the accepted Content-Length is the one the field says.
import FuzzSupport
import NIOCore
import TollgateHTTP

@testable import TollgateSession

enum Observed: Equatable {
    case head(HTTPResponseHead)
    case interim(HTTPResponseHead)
    case body([UInt8])
    case end(reusable: Bool)
    case failure(String)
    case remaining([UInt8])
}

func record(_ event: ResponseDecoder.Event, into seen: inout [Observed]) {
    switch event {
    case .head(let head): seen.append(.head(head))
    case .interim(let head): seen.append(.interim(head))
    case .body(let buffer):
        let bytes = Array(buffer.readableBytesView)
        if case .body(let before) = seen.last {
            seen[seen.count - 1] = .body(before + bytes)
        } else {
            seen.append(.body(bytes))
        }
    case .end(let reusable): seen.append(.end(reusable: reusable))
    }
}

func decode<Pieces: Sequence<ArraySlice<UInt8>>>(_ pieces: Pieces, head: Bool) -> [Observed] {
    var decoder = ResponseDecoder()
    decoder.requestIsHead = head
    var seen: [Observed] = []
    do {
        for piece in pieces {
            decoder.feed(ByteBuffer(bytes: piece))
            while let event = try decoder.next() { record(event, into: &seen) }
        }
        while let event = try decoder.inputEnded() { record(event, into: &seen) }
    } catch {
        seen.append(.failure(error.message))
        fuzzCheck((try? decoder.next()) == nil, "an event after a failure")
    }
    let rest = Array(decoder.takeRemainingBytes().readableBytesView)
    if !rest.isEmpty, case .head(let last)? = seen.last(where: { if case .head = $0 { true } else { false } }),
        last.status == 101
    {
        seen.append(.remaining(rest))
    }
    return seen
}

/// The length RFC 9110 §8.6 reads from the fields: one value, or a list of equal values.
func oracleLength(_ fields: HeaderFields) -> Int64? {
    var length: Int64?
    for element in fields.values(for: "Content-Length").joined(separator: ",").split(
        separator: ",",
        omittingEmptySubsequences: false
    ) {
        let digits = element.trimmingCharacters(in: " \t")
        guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let number = Int64(digits)
        else { return nil }
        if let length, length != number { return nil }
        length = number
    }
    return length
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(self.drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

func check(_ seen: [Observed], head isHead: Bool) {
    var current: HTTPResponseHead?
    var bodyBytes: Int64 = 0
    for (index, event) in seen.enumerated() {
        switch event {
        case .head(let head):
            fuzzCheck(current == nil, "a head inside a response")
            current = head
            bodyBytes = 0
            if head.headerFields.contains("Content-Length") && !head.headerFields.contains("Transfer-Encoding")
                && !isHead && !head.statusForbidsBody && head.status != 101
            {
                let read = ResponseDecoder.contentLength(head.headerFields)
                let expected = oracleLength(head.headerFields)
                fuzzCheck(
                    read == expected,
                    "Content-Length read as \(String(describing: read)), fields say \(String(describing: expected))"
                )
            }
        case .interim:
            fuzzCheck(current == nil, "an interim response inside a response")
        case .body(let bytes):
            fuzzCheck(current != nil, "a body outside a response")
            bodyBytes += Int64(bytes.count)
        case .end(let reusable):
            guard let head = current else {
                fuzzCheck(false, "an end outside a response")
                return
            }
            let fields = head.headerFields
            let hasBody = !isHead && !head.statusForbidsBody && head.status != 101
            if hasBody, !fields.contains("Transfer-Encoding"), let length = oracleLength(fields) {
                fuzzCheck(bodyBytes == length, "\(bodyBytes) body bytes for Content-Length \(length)")
            }
            if !hasBody { fuzzCheck(bodyBytes == 0, "a body on a response that has none") }
            if hasBody, fields.contains("Transfer-Encoding"), fields.contains("Content-Length") {
                fuzzCheck(
                    !reusable,
                    "a response with Transfer-Encoding and Content-Length left the connection reusable"
                )
            }
            current = nil
        case .failure, .remaining:
            fuzzCheck(index == seen.count - 1, "events after a failure or an upgrade")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseDecoder(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let all = FuzzInput(start, count)
    let isHead = all.bytes[0] & 1 == 1
    let input = FuzzInput(bytes: Array(all.bytes.dropFirst()))
    let whole = decode([input.bytes[...]], head: isHead)
    check(whole, head: isHead)
    // Byte by byte costs a decoder step and a buffer per byte: for the shorter inputs, which are most.
    if input.bytes.count <= 1024 {
        let byteByByte = decode(input.bytes.indices.map { input.bytes[$0...$0] }, head: isHead)
        fuzzCheck(byteByByte == whole, "byte by byte: \(byteByByte) whole: \(whole)")
    }
    let pieces = decode(input.pieces(largest: 13), head: isHead)
    fuzzCheck(pieces == whole, "in pieces: \(pieces) whole: \(whole)")
    for point in input.splitPoints(limit: 24) {
        let split = decode([input.bytes[..<point], input.bytes[point...]], head: isHead)
        fuzzCheck(split == whole, "cut at \(point): \(split) whole: \(whole)")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzResponseDecoder(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzResponseDecoder) }
}
