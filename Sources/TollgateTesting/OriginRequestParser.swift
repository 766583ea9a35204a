import Foundation
import NIOCore
import TollgateHTTP

/// A small, forgiving HTTP/1.1 request parser for the test origin: head, then a body framed by
/// Content-Length or chunked coding. Test origins must be able to misbehave, so the origin
/// writes raw bytes and parses requests itself instead of using NIO's HTTP codec.
struct OriginRequestParser {
    private var buffer = ByteBuffer()

    enum Outcome {
        case request(method: String, target: String, headers: HeaderFields, body: [UInt8])
        case needMore
        case invalid
    }

    mutating func feed(_ bytes: ByteBuffer) {
        var bytes = bytes
        buffer.writeBuffer(&bytes)
    }

    mutating func next() -> Outcome {
        let view = buffer.readableBytesView
        guard let headEnd = view.firstRange(of: [13, 10, 13, 10]) else { return .needMore }
        let headText = String(decoding: view[view.startIndex..<headEnd.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return .invalid }
        var headers = HeaderFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return .invalid }
            headers.add(name: String(line[..<colon]), value: String(line[line.index(after: colon)...]).trimmingASCIIWhitespace())
        }
        var offset = headEnd.upperBound - view.startIndex
        var body: [UInt8] = []
        if headers[.transferEncoding]?.lowercased().contains("chunked") == true {
            while true {
                let rest = view.dropFirst(offset)
                guard let lineEnd = rest.firstRange(of: [13, 10]) else { return .needMore }
                let sizeText = String(decoding: rest[rest.startIndex..<lineEnd.lowerBound], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else { return .invalid }
                let dataStart = lineEnd.upperBound - view.startIndex
                if size == 0 {
                    let trailer = view.dropFirst(dataStart)
                    guard let end = trailer.firstRange(of: [13, 10]) else { return .needMore }
                    offset = end.upperBound - view.startIndex
                    break
                }
                guard view.count >= dataStart + size + 2 else { return .needMore }
                body.append(contentsOf: view.dropFirst(dataStart).prefix(size))
                offset = dataStart + size + 2
            }
        } else if let length = headers[.contentLength].flatMap({ Int($0) }) {
            guard view.count >= offset + length else { return .needMore }
            body = Array(view.dropFirst(offset).prefix(length))
            offset += length
        }
        buffer.moveReaderIndex(forwardBy: offset)
        buffer.discardReadBytes()
        return .request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: body)
    }
}

extension ByteBufferView {
    func firstRange(of pattern: [UInt8]) -> Range<Int>? {
        guard count >= pattern.count else { return nil }
        var index = startIndex
        while index <= endIndex - pattern.count {
            if self[index] == pattern[0] {
                var match = true
                for k in 1..<pattern.count where self[index + k] != pattern[k] {
                    match = false
                    break
                }
                if match { return index..<(index + pattern.count) }
            }
            index += 1
        }
        return nil
    }
}
