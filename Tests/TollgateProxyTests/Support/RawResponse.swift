import Foundation

/// An HTTP/1.1 response parsed from raw bytes (Content-Length, chunked, or no body).
struct RawResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The first value of a header, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of a header.
    func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The complete responses at the start of `bytes`, and the bytes after the last one.
    /// A 1xx response counts as its own response. Bodies are never read to the connection's end.
    static func parseAll(_ bytes: [UInt8]) -> (responses: [RawResponse], rest: [UInt8]) {
        var responses: [RawResponse] = []
        var rest = ArraySlice(bytes)
        while let (response, after) = parseOne(rest) {
            responses.append(response)
            rest = after
        }
        return (responses, Array(rest))
    }

    private static func parseOne(_ bytes: ArraySlice<UInt8>) -> (RawResponse, ArraySlice<UInt8>)? {
        guard let headEnd = find([13, 10, 13, 10], in: bytes) else { return nil }
        let headText = String(decoding: bytes[bytes.startIndex..<headEnd], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        var rest = bytes[(headEnd + 4)...]
        if (100..<200).contains(status) || status == 204 || status == 304 {
            return (response, rest)
        }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            guard rest.count >= length else { return nil }
            response.body = Array(rest.prefix(length))
            return (response, rest.dropFirst(length))
        }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            while true {
                guard let lineEnd = find([13, 10], in: rest) else { return nil }
                let sizeText = String(decoding: rest[rest.startIndex..<lineEnd], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else { return nil }
                rest = rest[(lineEnd + 2)...]
                if size == 0 {
                    guard let trailerEnd = find([13, 10], in: rest) else { return nil }
                    rest = rest[(trailerEnd + 2)...]
                    response.body = body
                    return (response, rest)
                }
                guard rest.count >= size + 2 else { return nil }
                body += rest.prefix(size)
                rest = rest.dropFirst(size + 2)
            }
        }
        return nil  // delimited by close: never complete while the connection is open
    }

    private static func find(_ needle: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = bytes.startIndex
        while index <= bytes.endIndex - needle.count {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
