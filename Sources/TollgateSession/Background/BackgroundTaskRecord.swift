import Foundation
import TollgateHTTP

/// What a background session keeps of one upload or download task in its LMDB store, so that
/// a session created again with the same identifier (after a crash, a restart, in another
/// process) can re-create the task and go on with it.
///
/// Encoded as JSON with a `version`; a record of another version is left alone, never guessed at.
struct BackgroundTaskRecord: Codable, Sendable, Equatable {
    static let version = 1

    enum Kind: String, Codable, Sendable {
        case download
        case upload
    }

    /// The lifecycle state that matters across a restart: whether the task is to run.
    enum RunState: String, Codable, Sendable {
        /// Created and not resumed yet, or suspended: re-created suspended.
        case suspended
        /// Resumed: re-created and resumed.
        case running
    }

    /// The response a download's bytes belong to: what makes the partial file resumable.
    struct ResponseRecord: Codable, Sendable, Equatable {
        var status: Int
        var fields: [[String]]
        /// The request that got it (after redirects).
        var request: DownloadResumeData.RequestRecord
        /// The If-Range value (strong ETag, else Last-Modified); nil when the response has none.
        var validator: String?
        /// Whether the server takes byte ranges (`Accept-Ranges: bytes`, or the response is a 206).
        var acceptsRanges: Bool
    }

    var version = BackgroundTaskRecord.version
    var identifier: Int
    var kind: Kind
    /// The request the task was created with (for an upload, its body is ``uploadFile``).
    var request: DownloadResumeData.RequestRecord
    /// The copy of an upload's file in the session's own storage.
    var uploadFile: String?
    var taskDescription: String?
    var earliestBeginDate: Date?
    var state: RunState = .suspended
    /// A download's file in the session's own storage, once the response arrived.
    var partialFile: String?
    var response: ResponseRecord?
    /// Bytes in the partial file when last written (the file itself is the authority: it may hold more).
    var bytesReceived: Int64 = 0
    /// The whole length, −1 when unknown.
    var expectedTotalBytes: Int64 = -1

    init(identifier: Int, kind: Kind, request: HTTPRequestHead) {
        self.identifier = identifier
        self.kind = kind
        self.request = DownloadResumeData.RequestRecord(request)
    }

    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The record, or nil for bytes that are not a record of this version.
    static func decode(_ data: Data) -> BackgroundTaskRecord? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard let record = try? decoder.decode(BackgroundTaskRecord.self, from: data), record.version == version else { return nil }
        return record
    }

    /// Resume data for the download as it stands on disk: the bytes in the partial file (every
    /// byte written is a byte of the body, in order, so the file's length is where to go on; at
    /// most the whole length less one) —
    /// nil when the response cannot be resumed (no validator, no ranges, not a GET, no bytes).
    func resumeData(fileLength: Int64) -> DownloadResumeData? {
        guard kind == .download, let response, let partialFile, let validator = response.validator, response.acceptsRanges,
            response.request.method == HTTPMethod.get.rawValue, fileLength > 0
        else { return nil }
        // A file that holds the whole body (killed after the last byte, before the end was
        // delivered) asks again for its last byte: a range past the end would be a 416, and the
        // 206 of one byte confirms the validator and lets the cache combine the entry.
        var offset = fileLength
        if expectedTotalBytes > 0, offset >= expectedTotalBytes { offset = expectedTotalBytes - 1 }
        return DownloadResumeData(
            url: response.request.url,
            originalRequest: request,
            currentRequest: response.request,
            validator: validator,
            bytesReceived: offset,
            expectedTotalBytes: expectedTotalBytes,
            partialFile: partialFile
        )
    }
}
