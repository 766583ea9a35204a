import Foundation
import TollgateHTTP

/// What a download needs to go on where it stopped: the opaque resume data of
/// ``DownloadTask/cancel(byProducingResumeData:)`` and of a failed download's error.
///
/// Encoded as a JSON object (docs/session.md, "Resume data"): `format` ("tollgate-resume-data")
/// and `version` (1) first; bytes of another format or version are refused, never guessed at.
struct DownloadResumeData: Codable, Sendable, Equatable {
    static let format = "tollgate-resume-data"
    static let version = 1

    /// A request's method, URL and header fields (bodies are never resumed: GET only).
    struct RequestRecord: Codable, Sendable, Equatable {
        var method: String
        var url: String
        var fields: [[String]]

        init(_ head: HTTPRequestHead) {
            method = head.method.rawValue
            url = head.url.absoluteString
            fields = head.headerFields.map { [$0.name, $0.value] }
        }

        var head: HTTPRequestHead? {
            guard let url = HTTPURL(string: url), fields.allSatisfy({ $0.count == 2 }) else { return nil }
            return HTTPRequestHead(method: HTTPMethod(rawValue: method), url: url, headerFields: HeaderFields(fields.map { ($0[0], $0[1]) }))
        }
    }

    var format = DownloadResumeData.format
    var version = DownloadResumeData.version
    /// The URL the bytes came from (the current request's, after redirects).
    var url: String
    var originalRequest: RequestRecord?
    var currentRequest: RequestRecord
    /// The If-Range value: the response's strong ETag, else its Last-Modified.
    var validator: String
    /// Bytes in the partial file.
    var bytesReceived: Int64
    /// The whole length, −1 when unknown.
    var expectedTotalBytes: Int64
    /// The partial file (kept until a download made from this data takes it over).
    var partialFile: String

    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// Decodes resume data; a clear error for bytes that are not ours, another version, or a
    /// partial file that is gone.
    static func decode(_ data: Data) throws(SessionError) -> DownloadResumeData {
        struct Envelope: Decodable {
            var format: String?
            var version: Int?
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: data), envelope.format == format else {
            throw SessionError(.cannotResumeDownload, nil, "the resume data is not Tollgate resume data (corrupt or from elsewhere)")
        }
        guard envelope.version == version else {
            throw SessionError(
                .cannotResumeDownload, nil, "the resume data is version \(envelope.version.map(String.init) ?? "?"); this build reads version \(version)"
            )
        }
        guard let decoded = try? JSONDecoder().decode(DownloadResumeData.self, from: data), decoded.currentRequest.head != nil else {
            throw SessionError(.cannotResumeDownload, nil, "the resume data is damaged")
        }
        guard FileManager.default.fileExists(atPath: decoded.partialFile) else {
            throw SessionError(
                .cannotResumeDownload, HTTPURL(string: decoded.url), "the partial file \(decoded.partialFile) is gone"
            )
        }
        return decoded
    }

    /// The partial file that Tollgate resume data names (nil for other bytes); no check that it exists.
    static func partialFile(in data: Data) -> String? {
        struct Envelope: Decodable {
            var format: String?
            var partialFile: String?
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: data), envelope.format == format else { return nil }
        return envelope.partialFile
    }

    /// Whether the server that sent `response` takes byte ranges: `Accept-Ranges: bytes`, or the
    /// response is itself a 206 — one of the seeds' conditions for resume data.
    static func acceptsRanges(_ response: HTTPResponseHead) -> Bool {
        response.status == 206 || response.headerFields.listContains("Accept-Ranges", token: "bytes")
    }

    /// The request that asks for the rest: the current request with `Range: bytes=N-` and `If-Range`.
    func resumingRequest() -> Request? {
        guard var head = currentRequest.head else { return nil }
        head.headerFields.remove("Range")
        head.headerFields.remove("If-Range")
        if bytesReceived > 0 {
            head.headerFields.add(name: "Range", value: "bytes=\(bytesReceived)-")
            head.headerFields.add(name: "If-Range", value: validator)
        }
        return Request(method: head.method, url: head.url, headerFields: head.headerFields)
    }
}
