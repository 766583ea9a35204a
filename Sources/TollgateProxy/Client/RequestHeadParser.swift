import Foundation
import NIOCore
import TollgateHTTP

/// Parses one complete request head (request line, field lines, empty line), whose line ends
/// ``RequestDecoder`` has already checked, and decides its body framing.
enum RequestHeadParser {
    /// Parses `bytes`, which end with CRLF CRLF.
    ///
    /// One pass over the bytes in place (``HeadLines``: the decoder's ``HeadScanner`` has checked
    /// every line end), and only the method, the target, and each field's name and value become
    /// strings.
    static func parse(_ bytes: ByteBuffer) -> Result<ClientRequestHead, ClientRequestError> {
        let byteCount = bytes.readableBytes
        let parsed = bytes.withUnsafeReadableBytes {
            raw -> Result<(method: String, target: String, minorVersion: Int, fields: HeaderFields), ClientRequestError> in
            var requestLine: (String, String, Int)?
            var fields = HeaderFields(capacityForHead: raw)
            var ended = false
            for line in HeadLines(raw) {
                if requestLine == nil {
                    switch parseRequestLine(line) {
                    case .failure(let error): return .failure(error)
                    case .success(let parts): requestLine = parts
                    }
                } else if line.isEmpty {
                    ended = true
                    break
                } else {
                    switch parseField(line) {
                    case .failure(let error): return .failure(error)
                    case .success(let (name, value)):
                        fields.add(name: name, value: value)
                    }
                }
            }
            guard let (method, target, minorVersion) = requestLine, ended else {
                return .failure(.malformed("the request head is empty"))
            }
            return .success((method, target, minorVersion, fields))
        }
        let method: String
        let target: String
        let minorVersion: Int
        let fields: HeaderFields
        switch parsed {
        case .failure(let error): return .failure(error)
        case .success(let head): (method, target, minorVersion, fields) = head
        }
        let hosts = fields.count(named: .host)
        if hosts > 1 { return .failure(.malformed("more than one Host header field")) }
        if hosts == 0, minorVersion >= 1 {
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
    static func parseRequestLine<Line: Collection<UInt8>>(_ line: Line) -> Result<(String, String, Int), ClientRequestError> {
        // Split at the first two spaces by index (no array of parts: this runs for every request).
        guard let firstSpace = line.firstIndex(of: 0x20) else {
            return .failure(.malformed("the request line is not METHOD TARGET VERSION"))
        }
        let afterMethod = line.index(after: firstSpace)
        guard let secondSpace = line[afterMethod...].firstIndex(of: 0x20) else {
            return .failure(.malformed("the request line is not METHOD TARGET VERSION"))
        }
        let method = line[line.startIndex..<firstSpace]
        let target = line[afterMethod..<secondSpace]
        let version = line[line.index(after: secondSpace)...]
        guard !method.isEmpty, !target.isEmpty, !version.contains(0x20) else {
            return .failure(.malformed("the request line is not METHOD TARGET VERSION"))
        }
        guard method.allSatisfy(isTokenByte) else { return .failure(.malformed("invalid method")) }
        guard target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.malformed("the request target contains a byte that is not visible ASCII"))
        }
        func versionByte(_ offset: Int) -> UInt8 { version[version.index(version.startIndex, offsetBy: offset)] }
        guard version.count == 8, version.starts(with: "HTTP/".utf8), versionByte(6) == UInt8(ascii: "."),
            let major = digit(versionByte(5)), let minor = digit(versionByte(7))
        else {
            return .failure(.malformed("invalid HTTP version"))
        }
        guard major == 1 else {
            return .failure(
                ClientRequestError(status: 505, code: .badRequest, message: "only HTTP/1.0 and HTTP/1.1 are served")
            )
        }
        return .success(
            (String(decoding: method, as: UTF8.self), String(decoding: target, as: UTF8.self), min(minor, 1))
        )
    }

    /// `name ":" OWS value OWS`: a token name with no whitespace before the colon (RFC 9112
    /// §5.1), no obs-fold, and a value of visible bytes, spaces and tabs in valid UTF-8. Returns
    /// the name's and the value's bytes (the value trimmed), as views of `line`.
    ///
    /// One pass over the name and one over the value (its UTF-8 decoded only when it has a byte
    /// past ASCII): this runs for every field of every request.
    static func parseField(
        _ line: UnsafeRawBufferPointer
    ) -> Result<(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer), ClientRequestError> {
        guard let first = line.first else { return .failure(.malformed("empty field line")) }
        if first == 0x20 || first == 0x09 {
            return .failure(.malformed("obs-fold (a field line starting with whitespace) is not accepted"))
        }
        var colon = 0
        while colon < line.count, line[colon] != UInt8(ascii: ":") {
            guard isTokenByte(line[colon]) else {
                guard line[colon...].contains(UInt8(ascii: ":")) else {
                    return .failure(.malformed("a field line without a colon"))
                }
                return .failure(
                    .malformed("invalid field name (whitespace before the colon, or a byte a name may not have)")
                )
            }
            colon += 1
        }
        guard colon < line.count else { return .failure(.malformed("a field line without a colon")) }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        guard !name.isEmpty else {
            return .failure(
                .malformed("invalid field name (whitespace before the colon, or a byte a name may not have)")
            )
        }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        var seen: UInt8 = 0
        for byte in value {
            if (byte < 0x20 && byte != 0x09) || byte == 0x7F {
                return .failure(.malformed("a control byte in the value of \(String(decoding: name, as: UTF8.self))"))
            }
            seen |= byte
        }
        if seen >= 0x80, !isValidUTF8(value) {
            return .failure(.malformed("the value of \(String(decoding: name, as: UTF8.self)) is not valid UTF-8"))
        }
        return .success((name, value))
    }

    /// The body framing of RFC 9112 §6.3, refusing every ambiguous case.
    static func bodyFraming(
        _ fields: HeaderFields,
        minorVersion: Int
    ) -> Result<ClientRequestHead.Framing, ClientRequestError> {
        // The usual request has neither: no arrays for it.
        guard fields.contains(.transferEncoding) || fields.contains(.contentLength) else { return .success(.none) }
        let encodings = fields.values(for: .transferEncoding)
        let lengths = fields.values(for: .contentLength)
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

    static func isTokenByte(_ byte: UInt8) -> Bool { FieldList.isTokenByte(byte) }

    private static func digit(_ byte: UInt8) -> Int? {
        (0x30...0x39).contains(byte) ? Int(byte - 0x30) : nil
    }
}

extension RequestHeadParser {
    /// Whether `bytes` are valid UTF-8 (a value that is not is refused, never repaired: a proxy
    /// must not forward bytes other than those it received).
    fileprivate static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
