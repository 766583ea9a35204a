import Foundation
import NIOCore
import TollgateHTTP

/// Parses one complete request head (request line, field lines, empty line), whose line ends
/// ``RequestDecoder`` has already checked, and decides its body framing.
enum RequestHeadParser {
    /// Parses `bytes`, which end with CRLF CRLF.
    static func parse(_ bytes: ByteBuffer) -> Result<ClientRequestHead, ClientRequestError> {
        let byteCount = bytes.readableBytes
        let lines = bytes.readableBytesView.split(separator: 0x0A, omittingEmptySubsequences: false)
            .map { $0.dropLast() }  // the CR of each CRLF
        guard lines.count >= 3, let requestLine = lines.first else {
            return .failure(.malformed("the request head is empty"))
        }
        let (method, target, minorVersion): (String, String, Int)
        switch parseRequestLine(Array(requestLine)) {
        case .failure(let error): return .failure(error)
        case .success(let parts): (method, target, minorVersion) = parts
        }
        var fields = HeaderFields()
        for line in lines.dropFirst().dropLast(2) {
            switch parseField(Array(line)[...]) {
            case .failure(let error): return .failure(error)
            case .success(let (name, value)): fields.add(name: name, value: value)
            }
        }
        let hosts = fields.values(for: "Host")
        if hosts.count > 1 { return .failure(.malformed("more than one Host header field")) }
        if hosts.isEmpty, minorVersion >= 1 {
            return .failure(.malformed("an HTTP/1.1 request without a Host header field"))
        }
        let framing: ClientRequestHead.Framing
        switch bodyFraming(fields, minorVersion: minorVersion) {
        case .failure(let error): return .failure(error)
        case .success(let value): framing = value
        }
        if method == "CONNECT", framing != .none, framing != .length(0) {
            return .failure(.malformed("a CONNECT request cannot carry a body"))
        }
        return .success(
            ClientRequestHead(
                method: method,
                target: target,
                minorVersion: minorVersion,
                headerFields: fields,
                framing: framing,
                byteCount: byteCount
            )
        )
    }

    /// `method SP request-target SP HTTP-version`, single spaces, nothing else.
    static func parseRequestLine(_ line: [UInt8]) -> Result<(String, String, Int), ClientRequestError> {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            return .failure(.malformed("the request line is not METHOD TARGET VERSION"))
        }
        guard parts[0].allSatisfy(isTokenByte) else { return .failure(.malformed("invalid method")) }
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.malformed("the request target contains a byte that is not visible ASCII"))
        }
        let version = parts[2]
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)),
            version[version.startIndex + 6] == UInt8(ascii: "."),
            let major = digit(version[version.startIndex + 5]), let minor = digit(version[version.startIndex + 7])
        else {
            return .failure(.malformed("invalid HTTP version"))
        }
        guard major == 1 else {
            return .failure(
                ClientRequestError(status: 505, code: .badRequest, message: "only HTTP/1.0 and HTTP/1.1 are served")
            )
        }
        return .success(
            (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), min(minor, 1))
        )
    }

    /// `name ":" OWS value OWS`: a token name with no whitespace before the colon (RFC 9112
    /// §5.1), no obs-fold, and a value of visible bytes, spaces and tabs in valid UTF-8.
    static func parseField(_ line: ArraySlice<UInt8>) -> Result<(String, String), ClientRequestError> {
        guard let first = line.first else { return .failure(.malformed("empty field line")) }
        if first == 0x20 || first == 0x09 {
            return .failure(.malformed("obs-fold (a field line starting with whitespace) is not accepted"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(.malformed("a field line without a colon"))
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            return .failure(
                .malformed("invalid field name (whitespace before the colon, or a byte a name may not have)")
            )
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            return .failure(.malformed("a control byte in the value of \(String(decoding: name, as: UTF8.self))"))
        }
        guard let text = String(validatingUTF8Bytes: value) else {
            return .failure(.malformed("the value of \(String(decoding: name, as: UTF8.self)) is not valid UTF-8"))
        }
        return .success((String(decoding: name, as: UTF8.self), text))
    }

    /// The body framing of RFC 9112 §6.3, refusing every ambiguous case.
    static func bodyFraming(
        _ fields: HeaderFields,
        minorVersion: Int
    ) -> Result<ClientRequestHead.Framing, ClientRequestError> {
        let encodings = fields.values(for: "Transfer-Encoding")
        let lengths = fields.values(for: "Content-Length")
        if !encodings.isEmpty {
            guard lengths.isEmpty else {
                return .failure(.malformed("both Content-Length and Transfer-Encoding"))
            }
            guard minorVersion >= 1 else {
                return .failure(.malformed("Transfer-Encoding in an HTTP/1.0 request"))
            }
            let codings = encodings.flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
            guard codings.last == "chunked" else {
                return .failure(.malformed("Transfer-Encoding must end with chunked"))
            }
            guard codings.count == 1 else {
                return .failure(
                    .malformed("only the chunked transfer coding is accepted, not \(codings.joined(separator: ", "))")
                )
            }
            return .success(.chunked)
        }
        guard !lengths.isEmpty else { return .success(.none) }
        var length: Int64?
        for value in lengths.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
            let text = value.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int64(text)
            else {
                return .failure(.malformed("invalid Content-Length"))
            }
            if let length, length != number {
                return .failure(.malformed("Content-Length values differ"))
            }
            length = number
        }
        return .success(.length(length ?? 0))
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func digit(_ byte: UInt8) -> Int? {
        (0x30...0x39).contains(byte) ? Int(byte - 0x30) : nil
    }
}

extension String {
    /// The text of `bytes` if they are valid UTF-8, else nil (never repaired: a proxy must not
    /// forward bytes other than those it received).
    fileprivate init?(validatingUTF8Bytes bytes: ArraySlice<UInt8>) {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            self = String(decoding: bytes, as: UTF8.self)
            return
        }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var text = ""
        text.reserveCapacity(bytes.count)
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
            case .emptyInput:
                self = text
                return
            case .error: return nil
            }
        }
    }
}
