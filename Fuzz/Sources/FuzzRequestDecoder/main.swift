// The client request decoder (RequestDecoder: request heads, length and chunked bodies,
// trailers, CONNECT and upgrades) fed arbitrary bytes.
//
// Invariants:
// - the same bytes give the same events however they arrive: all at once, byte by byte (up to
//   1 KiB), in pieces of varying size, and cut in two at every point (an even spread of 24 points
//   in longer inputs; body pieces merged before comparing);
// - a head has exactly one framing, the one its fields name: `Transfer-Encoding` (then no
//   `Content-Length`) is chunked, `Content-Length` values that are all the same number give that
//   length, neither gives no body; never two readings;
// - a length-delimited body carries exactly its length before its end; events follow
//   head (body)* end, and nothing follows a failure.
import FuzzSupport
import NIOCore
import TollgateHTTP

@testable import TollgateProxy

/// One event as compared across feedings: body pieces merged, the bytes after a stop kept.
enum Observed: Equatable {
    case head(ClientRequestHead)
    case body([UInt8])
    case end
    case failure(ClientRequestError)
    case rawAfterStop([UInt8])
}

let limits = RequestDecoder.Limits(maxHeaderBytes: 2048, maxHeaders: 24)

/// Feeds `pieces` in order, taking every event after each, and returns what was seen.
func decode<Pieces: Sequence<ArraySlice<UInt8>>>(_ pieces: Pieces) -> [Observed] {
    var decoder = RequestDecoder(limits: limits)
    var seen: [Observed] = []
    for piece in pieces {
        decoder.feed(ByteBuffer(bytes: piece))
        while let event = decoder.next() {
            switch event {
            case .head(let head): seen.append(.head(head))
            case .body(let buffer):
                let bytes = Array(buffer.readableBytesView)
                if case .body(let before) = seen.last {
                    seen[seen.count - 1] = .body(before + bytes)
                } else {
                    seen.append(.body(bytes))
                }
            case .end: seen.append(.end)
            case .failure(let error): seen.append(.failure(error))
            }
        }
    }
    if decoder.isStopped { seen.append(.rawAfterStop(Array(decoder.takeRawBytes().readableBytesView))) }
    return seen
}

/// The framing RFC 9112 §6.3 gives a head's fields, where there is exactly one reading.
func expectedFraming(_ head: ClientRequestHead) -> ClientRequestHead.Framing? {
    let transferEncoding = head.headerFields.values(for: "Transfer-Encoding")
    let contentLength = head.headerFields.values(for: "Content-Length")
    if !transferEncoding.isEmpty {
        return contentLength.isEmpty ? .chunked : nil
    }
    if contentLength.isEmpty { return ClientRequestHead.Framing.none }
    // Every element plain digits, all the same number (`2, 02` is one length: RFC 9110 §8.6).
    var lengths = Set<Int64>()
    for element in FieldList.elements(contentLength) {
        guard !element.isEmpty, element.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int64(element)
        else { return nil }
        lengths.insert(length)
    }
    guard lengths.count == 1, let length = lengths.first else { return nil }
    return .length(length)
}

/// The event grammar and the framing of every head.
func checkSequence(_ seen: [Observed]) {
    var inMessage = false
    var remaining: Int64?
    for (index, event) in seen.enumerated() {
        switch event {
        case .head(let head):
            fuzzCheck(!inMessage, "a head inside a message at event \(index)")
            let expected = expectedFraming(head)
            fuzzCheck(expected != nil, "a head with an ambiguous framing was accepted: \(head.headerFields)")
            let framingAgrees: Bool
            if head.method == "CONNECT" {
                framingAgrees = head.framing == .none || head.framing == .length(0)
            } else {
                framingAgrees = head.framing == expected
            }
            fuzzCheck(framingAgrees, "framing \(head.framing) but the fields say \(String(describing: expected))")
            inMessage = true
            if case .length(let length) = head.framing { remaining = length } else { remaining = nil }
        case .body(let bytes):
            fuzzCheck(inMessage, "a body outside a message at event \(index)")
            if let left = remaining {
                fuzzCheck(Int64(bytes.count) <= left, "a body longer than its Content-Length")
                remaining = left - Int64(bytes.count)
            }
        case .end:
            fuzzCheck(inMessage, "an end outside a message at event \(index)")
            if let left = remaining { fuzzCheck(left == 0, "an end \(left) bytes before the Content-Length") }
            inMessage = false
            remaining = nil
        case .failure:
            fuzzCheck(index == seen.count - 1, "events after a failure")
        case .rawAfterStop:
            fuzzCheck(index == seen.count - 1, "events after the decoder stopped")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestDecoder(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = FuzzInput(start, count)
    let whole = decode([input.bytes[...]])
    checkSequence(whole)
    // Byte by byte costs a decoder step and a buffer per byte: for the shorter inputs, which are most.
    if input.bytes.count <= 1024 {
        let byteByByte = decode(input.bytes.indices.map { input.bytes[$0...$0] })
        fuzzCheck(byteByByte == whole, "byte by byte: \(byteByByte) whole: \(whole)")
    }
    let pieces = decode(input.pieces(largest: 17))
    fuzzCheck(pieces == whole, "in pieces: \(pieces) whole: \(whole)")
    for point in input.splitPoints(limit: 24) {
        let split = decode([input.bytes[..<point], input.bytes[point...]])
        fuzzCheck(split == whole, "cut at \(point): \(split) whole: \(whole)")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzRequestDecoder(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzRequestDecoder) }
}
