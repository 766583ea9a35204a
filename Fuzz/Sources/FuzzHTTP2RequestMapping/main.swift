// The HTTP/2 front's mapping of a stream's header block to the request sent upstream as HTTP/1.1
// (`HTTP2RequestMapping`, RFC 9113 §8.3). Input: one byte of flags (bit 0: a forward listener's
// absolute target, bit 1: END_STREAM on the HEADERS), then one field a line, `name=value`.
//
// Invariants, for a block mapped to a request (an h2 → HTTP/1.1 downgrade must not smuggle):
// - the method is a token and the target has no space, control byte or DEL: the request line
//   sent upstream is one line of three parts;
// - every field name is a non-empty token (the client's are lowercase; the Host the mapping adds
//   is spelled as HTTP/1.1 spells it), no value holds CR, LF or NUL, and no connection-specific
//   field (Connection, Transfer-Encoding, …) is left;
// - a stream that ended with its HEADERS has no body framing (none, or a length of 0);
// - mapping the same block again gives the same request.
import FuzzSupport

@testable import TollgateHTTP
@testable import TollgateProxy

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2RequestMapping(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = FuzzInput(start, count)
    guard let flags = input.bytes.first else { return 0 }
    let absolute = flags & 1 != 0
    let endStream = flags & 2 != 0
    let lines = input.bytes.dropFirst().split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let fields: [(name: String, value: String)] = lines.map { line in
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else {
            return (String(decoding: line, as: UTF8.self), "")
        }
        return (String(decoding: line[..<equals], as: UTF8.self), String(decoding: line[line.index(after: equals)...], as: UTF8.self))
    }
    guard case .request(let head)? = try? HTTP2RequestMapping.map(fields, endStream: endStream, absoluteTarget: absolute) else {
        return 0
    }
    let isToken: (UInt8) -> Bool = { byte in
        byte > 0x20 && byte < 0x7F && !"\"(),/:;<=>?@[\\]{}".utf8.contains(byte)
    }
    fuzzCheck(!head.method.isEmpty && head.method.utf8.allSatisfy(isToken), "method '\(head.method)' is not a token")
    fuzzCheck(
        !head.target.isEmpty && head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F },
        "target '\(head.target)' would break the upstream request line"
    )
    for field in head.headerFields {
        fuzzCheck(
            !field.name.isEmpty && field.name.utf8.allSatisfy(isToken),
            "field name '\(field.name)' is not a token"
        )
        fuzzCheck(
            !field.value.utf8.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D },
            "field \(field.name) has CR, LF or NUL in its value"
        )
        fuzzCheck(
            !HTTP2RequestMapping.connectionSpecific.contains(field.name.lowercased()),
            "connection-specific field \(field.name) left in the request"
        )
    }
    if endStream {
        switch head.framing {
        case .none, .length(0): break
        default: fuzzCheck(false, "a stream ended with its HEADERS has body framing \(head.framing)")
        }
    }
    let again = try? HTTP2RequestMapping.map(fields, endStream: endStream, absoluteTarget: absolute)
    guard case .request(let second)? = again else {
        fuzzCheck(false, "the same block mapped a second time is not a request")
        return 0
    }
    fuzzCheck(
        second.method == head.method && second.target == head.target && second.headerFields == head.headerFields,
        "the same block mapped twice gives two requests"
    )
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzHTTP2RequestMapping(_:_:)``.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzHTTP2RequestMapping) }
}
