import Foundation
import TollgateHTTP

/// `warm --json FILE`: what became of each URL, for a machine.
///
/// ```json
/// {"version": 1,
///  "summary": {"urls": 3, "stored": 1, "fresh": 1, "not_stored": 0, "failed": 1, "resumed": 1, "skipped_lines": 0},
///  "urls": [{"url": "…", "outcome": "stored", "status": 200, "cache_status": "tollgate; fwd=miss; stored",
///            "bytes": 1048576, "duration_ms": 812, "resumed_from": 524288, "error": null}, …]}
/// ```
struct WarmReport: Encodable {
    struct Summary: Encodable {
        var urls: Int
        var stored: Int
        var fresh: Int
        var notStored: Int
        var failed: Int
        var resumed: Int
        var skippedLines: Int
    }

    struct Entry: Encodable {
        var url: String
        /// `stored`, `fresh`, `not-stored` or `failed`.
        var outcome: String
        var status: Int?
        var cacheStatus: String?
        var bytes: Int64
        var durationMs: Int
        var resumedFrom: Int64?
        var error: String?

        // Explicit keys: absent optionals are written as null, so every entry has every field.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(outcome, forKey: .outcome)
            try container.encode(status, forKey: .status)
            try container.encode(cacheStatus, forKey: .cacheStatus)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(durationMs, forKey: .durationMs)
            try container.encode(resumedFrom, forKey: .resumedFrom)
            try container.encode(error, forKey: .error)
        }

        enum CodingKeys: String, CodingKey {
            case url, outcome, status, bytes, error
            case cacheStatus = "cache_status"
            case durationMs = "duration_ms"
            case resumedFrom = "resumed_from"
        }
    }

    var version = 1
    var summary: Summary
    var urls: [Entry]

    init(urls: [HTTPURL], outcomes: [URLWarmer.Outcome], skippedLines: Int) {
        let count = { (kind: URLWarmer.Outcome.Kind) in outcomes.filter { $0.kind == kind }.count }
        summary = Summary(
            urls: urls.count, stored: count(.stored), fresh: count(.fresh), notStored: count(.notStored), failed: count(.failed),
            resumed: outcomes.filter(\.resumed).count, skippedLines: skippedLines
        )
        self.urls = zip(urls, outcomes).map { url, outcome in
            Entry(
                url: url.absoluteString, outcome: outcome.kind.rawValue, status: outcome.status, cacheStatus: outcome.cacheStatus,
                bytes: outcome.bytes, durationMs: Int((outcome.duration * 1000).rounded()), resumedFrom: outcome.resumedFrom,
                error: outcome.error
            )
        }
    }

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        do {
            try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CommandFailure.user("--json: cannot write \(path): \(error.localizedDescription)")
        }
    }
}
