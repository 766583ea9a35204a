public import Foundation

/// The lockfile of a warmed cache (`tollgate warm --manifest FILE`): for each URL warmed, what
/// the cache holds for it, so that an offline build can be served exactly that and nothing else
/// (`serve --offline --manifest FILE`), and `cache verify --manifest FILE` can prove it is still
/// there.
///
/// The file is JSON, written with sorted keys and entries in a stable order, so that two
/// manifests of the same cache are byte-identical and a change shows as a small diff:
///
/// ```json
/// {
///   "entries" : [
///     {
///       "config_sha256" : "…",
///       "key" : "https://example.com/a.tar.gz",
///       "method" : "GET",
///       "sha256" : "…",
///       "size" : 1048576,
///       "status" : 200,
///       "stored_at" : "2026-11-26T17:00:00Z",
///       "url" : "https://example.com/a.tar.gz",
///       "vary" : { "accept-encoding" : "gzip" }
///     }
///   ],
///   "generator" : "tollgate",
///   "version" : 1
/// }
/// ```
public struct CacheManifest: Sendable, Hashable, Codable {
    /// The format this code writes and reads.
    public static let currentVersion = 1

    /// One stored response a listed URL resolved to.
    public struct Entry: Sendable, Hashable, Codable {
        /// The request method (GET: only GET responses are stored).
        public var method: String
        /// The URL as listed.
        public var url: String
        /// The URL the cache keys it under, after the host rule's `cache.key` normalization.
        public var key: String
        /// The request fields the response's Vary names, with the values the variant was
        /// stored for (null: the request lacked the field); empty without Vary.
        public var vary: [String: String?]
        /// The stored status.
        public var status: Int
        /// The body's length in bytes.
        public var size: Int64
        /// The body's SHA-256, lowercase hex.
        public var sha256: String
        /// When the response was stored.
        public var storedAt: Date
        /// The SHA-256 of the configuration the warm ran with (lowercase hex).
        public var configSHA256: String

        enum CodingKeys: String, CodingKey {
            case method, url, key, vary, status, size, sha256
            case storedAt = "stored_at"
            case configSHA256 = "config_sha256"
        }

        /// Creates an entry.
        public init(
            method: String = "GET", url: String, key: String, vary: [String: String?] = [:], status: Int,
            size: Int64, sha256: String, storedAt: Date, configSHA256: String
        ) {
            self.method = method
            self.url = url
            self.key = key
            self.vary = vary
            self.status = status
            self.size = size
            self.sha256 = sha256
            self.storedAt = storedAt
            self.configSHA256 = configSHA256
        }

        /// What identifies the variant: method, key and the Vary'd values. Two entries with the
        /// same identity describe the same stored variant (a later warm replaces the earlier).
        public var identity: String {
            let varied = vary.keys.sorted().map { "\($0)=\(vary[$0].flatMap { $0 } ?? "\u{0}")" }
            return ([method, key, url] + varied).joined(separator: "\n")
        }
    }

    /// The format version (``currentVersion``).
    public var version: Int
    /// What wrote it.
    public var generator: String
    /// The entries, in ``sorted()`` order.
    public var entries: [Entry]

    /// A manifest of `entries`.
    public init(entries: [Entry] = []) {
        self.version = Self.currentVersion
        self.generator = "tollgate"
        self.entries = entries
        sort()
    }

    /// Why a manifest file cannot be used.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads a manifest file.
    public static func load(contentsOf path: String) throws(LoadError) -> CacheManifest {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LoadError(description: "\(path): cannot read the manifest")
        }
        return try decode(data, name: path)
    }

    /// Decodes a manifest; `name` is for the error.
    public static func decode(_ data: Data, name: String) throws(LoadError) -> CacheManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let manifest: CacheManifest
        do {
            manifest = try decoder.decode(CacheManifest.self, from: data)
        } catch {
            throw LoadError(description: "\(name): not a Tollgate manifest: \(Self.describe(error))")
        }
        guard manifest.version == currentVersion else {
            throw LoadError(
                description: "\(name): manifest version \(manifest.version); this tollgate reads version \(currentVersion)"
            )
        }
        return manifest
    }

    /// The JSON text: sorted keys, two-space indentation, a final newline.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var copy = self
        copy.sort()
        // Encoding plain strings, numbers and dates cannot fail.
        var data = (try? encoder.encode(copy)) ?? Data()
        data.append(0x0A)
        return data
    }

    /// Writes the manifest to `path` atomically (a temporary file renamed over it).
    public func write(to path: String) throws {
        try encoded().write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// This manifest with `newer` entries added; an entry of the same ``Entry/identity``
    /// is replaced.
    public func merging(_ newer: [Entry]) -> CacheManifest {
        var byIdentity: [String: Entry] = [:]
        for entry in entries { byIdentity[entry.identity] = entry }
        for entry in newer { byIdentity[entry.identity] = entry }
        return CacheManifest(entries: Array(byIdentity.values))
    }

    /// The entries for the cache key `key`.
    public func entries(forKey key: String) -> [Entry] {
        entries.filter { $0.key == key }
    }

    /// Orders the entries by key, then URL, then identity.
    private mutating func sort() {
        entries.sort { ($0.key, $0.url, $0.identity) < ($1.key, $1.url, $1.identity) }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing \"\(key.stringValue)\"" + Self.place(context)
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return context.debugDescription + Self.place(context)
        case DecodingError.dataCorrupted(let context):
            return context.debugDescription + Self.place(context)
        default:
            return "\(error)"
        }
    }

    private static func place(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "" : " at \(path)"
    }
}
