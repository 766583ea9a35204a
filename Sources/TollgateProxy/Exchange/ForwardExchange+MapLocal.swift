import Foundation
import NIOCore
import NIOPosix
import TollgateHTTP
import TollgatePolicy

/// `map-local`: a request answered with a local file instead of the origin.
extension ForwardExchange {
    /// The largest file answered (read whole, on NIO's thread pool).
    static let mappedFileLimit = 64 << 20

    /// Answers with the file `match` names: `200` with its bytes and a `Content-Type` from its
    /// extension (the rule's `response-headers` apply); `404 map-local-missing` when it is not
    /// there; `400` for a path that leaves its directory.
    func serveMapped(_ match: HostRule.LocalMapping.Match) {
        let path: String
        switch match {
        case .refused(let why):
            respond(OwnResponse(.badRequest, "map-local: \(why)"))
            return
        case .file(let file):
            path = file
        }
        let requestPath = url.path
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { () -> MappedRead in
            var isDirectory: ObjCBool = false
            var file = path
            if FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), isDirectory.boolValue {
                file += "/index.html"
            }
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                (attributes[.type] as? FileAttributeType) == .typeRegular
            else {
                return .answer(OwnResponse(.mapLocalMissing, "map-local: no file \(file) for \(requestPath)"))
            }
            guard ((attributes[.size] as? NSNumber)?.intValue ?? 0) <= Self.mappedFileLimit else {
                return .answer(OwnResponse(.internalError, "map-local: \(file) is larger than 64 MiB"))
            }
            guard let data = FileManager.default.contents(atPath: file) else {
                return .answer(OwnResponse(.mapLocalMissing, "map-local: cannot read \(file)"))
            }
            return .body(ByteBuffer(bytes: data), file)
        }.assumeIsolated().whenComplete { [self] result in
            guard !isFinished else { return }
            switch result {
            case .success(.body(let body, let file)):
                sendLocalAnswer(status: 200, body: body, contentType: Self.mediaType(of: file))
            case .success(.answer(let answer)):
                respond(answer)
            case .failure(let error):
                respond(OwnResponse(.internalError, "map-local: \(error)"))
            }
        }
    }

    /// What reading a mapped file gave: its bytes (and the file read), or the answer instead.
    private enum MappedRead: Sendable {
        case body(ByteBuffer, String)
        case answer(OwnResponse)
    }

    /// Answers with `body` made here (a mapped file, a purge's count): no task, no cache.
    func sendLocalAnswer(status: Int, body: ByteBuffer, contentType: String) {
        var fields = HeaderFields()
        fields.add(name: .contentType, value: contentType)
        fields.add(name: .contentLength, value: String(body.readableBytes))
        startResponse(HTTPResponseHead(status: status, headerFields: fields))
        record.bodyBytes = head.isHead ? 0 : Int64(body.readableBytes)
        guard let connection = finish() else { return }
        if !head.isHead { connection.sendBody(body) }
        connection.sendEnd()
    }

    /// The media type of a file by its extension (what a developer maps: data, pages, assets).
    static func mediaType(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let parts = name.split(separator: ".")
        let ext = parts.count > 1 ? parts[parts.count - 1].lowercased() : ""
        return mediaTypes[ext] ?? "application/octet-stream"
    }

    /// Media types by lower-case extension, made once.
    private static let mediaTypes: [String: String] = [
        "json": "application/json", "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
        "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "txt": "text/plain; charset=utf-8", "xml": "application/xml", "svg": "image/svg+xml", "png": "image/png",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "ico": "image/x-icon",
        "wasm": "application/wasm", "pdf": "application/pdf", "map": "application/json", "csv": "text/csv; charset=utf-8",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar", "woff2": "font/woff2",
    ]
}
