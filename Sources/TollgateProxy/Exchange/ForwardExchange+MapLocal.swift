import Foundation
import NIOCore
import NIOPosix
import TollgateHTTP
import TollgatePolicy

/// `map-local`: a request answered with a local file instead of the origin, as a static file
/// server answers it (``LocalFileAnswer``: validators, conditional requests, ranges).
extension ForwardExchange {
    /// Answers with the file `match` names (``LocalFileAnswer``; the rule's `response-headers`
    /// and `compress` apply); `404 map-local-missing` when it is not there; `400` for a path that
    /// leaves its directory. The file is opened on NIO's thread pool and sent as it is read.
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
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { MappedFile.open(path, for: requestPath) }
            .assumeIsolated().whenComplete { [self] result in
                switch result {
                case .success(.file(let file)):
                    guard !isFinished else {
                        file.close()
                        return
                    }
                    answer(from: file)
                case .success(.missing(let why)):
                    respond(OwnResponse(.mapLocalMissing, why))
                case .failure(let error):
                    respond(OwnResponse(.internalError, "map-local: \(error)"))
                }
            }
    }

    /// Sends the head `file` answers the request with, then its bytes: as one file region where
    /// the client connection takes one (``StoredBodyTransfer``), else read piece by piece.
    private func answer(from file: MappedFile) {
        let request = HTTPRequestHead(method: HTTPMethod(head.method), url: url, headerFields: head.headerFields)
        let answer = LocalFileAnswer(request: request, length: file.length, modified: file.modified, contentType: Self.mediaType(of: file.path))
        startResponse(HTTPResponseHead(status: answer.status, headerFields: answer.fields))
        guard let bytes = answer.bytes, !bytes.isEmpty, !head.isHead, let connection, connection.isActive else {
            file.close()
            endMappedAnswer()
            return
        }
        file.next = bytes.lowerBound
        file.end = bytes.upperBound
        mappedFile = file
        if bodyEncoder == nil, connection.acceptsFileRegion,
            StoredBodyTransfer.usesSendfile(length: Int64(bytes.count), clientIsLoopback: memo.clientIsLoopback),
            let written = connection.sendFile(FileRegion(fileHandle: file.handle, readerIndex: Int(bytes.lowerBound), endIndex: Int(bytes.upperBound)))
        {
            file.reading = true
            written.assumeIsolated().whenComplete { [self] result in
                file.reading = false
                file.close()
                mappedFile = nil
                guard !isFinished else { return }
                if case .failure = result {
                    finish()?.abort()
                    return
                }
                record.bodyBytes += Int64(bytes.count)
                endMappedAnswer()
            }
            return
        }
        pumpMappedFile()
    }

    /// Reads the next piece of the mapped file and writes it, unless a read is under way or the
    /// client's socket is full (``clientWritabilityChanged(_:)`` calls again when it drains).
    func pumpMappedFile() {
        guard let file = mappedFile, !file.reading, !isFinished, let connection else { return }
        if file.next == file.end {
            file.close()
            mappedFile = nil
            endMappedAnswer()
            return
        }
        guard connection.isWritable else {
            file.waitingForClient = true
            return
        }
        file.reading = true
        let count = Int(min(file.end - file.next, Int64(MappedFile.pieceSize)))
        Self.fileIO.read(fileHandle: file.handle, fromOffset: file.next, byteCount: count, allocator: Self.allocator, eventLoop: eventLoop)
            .assumeIsolated().whenComplete { [self] result in
                file.reading = false
                guard !isFinished, let client = self.connection else {
                    file.close()
                    return
                }
                switch result {
                case .success(let piece) where piece.readableBytes > 0:
                    file.next += Int64(piece.readableBytes)
                    sendBodyPiece(piece, to: client)
                    pumpMappedFile()
                case .success, .failure:
                    // The file shrank or failed under the read: the client must not take what
                    // it got for the whole file.
                    file.close()
                    mappedFile = nil
                    finish()?.abort()
                }
            }
    }

    /// The client's socket drained: a mapped file waiting for it goes on.
    func mappedFileClientDrained() {
        guard let file = mappedFile, file.waitingForClient else { return }
        file.waitingForClient = false
        pumpMappedFile()
    }

    /// The end of a mapped file's answer (after its body, if any).
    private func endMappedAnswer() {
        if let connection { sendCompressedEnd(to: connection) }
        finish()?.sendEnd()
    }

    /// Reads of mapped files, on NIO's thread pool.
    private static let fileIO = NonBlockingFileIO(threadPool: .singleton)

    /// Answers with `body` made here (a purge's count): no task, no cache.
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
        "mp4": "video/mp4", "webm": "video/webm", "mp3": "audio/mpeg", "woff": "font/woff", "avif": "image/avif",
    ]
}
