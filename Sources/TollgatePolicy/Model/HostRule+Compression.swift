import Foundation

extension HostRule {
    /// Responses of these hosts compressed with Brotli or gzip for clients that accept it
    /// (`compress`): nginx's `gzip on` (with `gzip_types`, `gzip_min_length`, `gzip_comp_level`
    /// and `gzip_vary`) and the `brotli` module's `brotli on`, Varnish's `http_gzip_support`. The
    /// cache keeps the origin's bytes; each response is compressed as it goes out.
    public struct Compression: Hashable, Sendable {
        /// The media types compressed (`types`), lower case, without parameters.
        public var types: [String] = Compression.defaultTypes
        /// The least `Content-Length` compressed (`min-size`); a body of unknown length is. Default: 1 KiB.
        public var minimumSize: Int64 = 1 << 10
        /// zlib's level, 1 (fastest) to 9 (smallest) (`level`). Default: 6, zlib's and Varnish's.
        public var level = 6
        /// Brotli's quality, 0 (fastest) to 11 (smallest) (`br-level`). Default: 5, a level made
        /// for compressing as a response goes out (11 is for files compressed once).
        public var brotliLevel = 5
        /// The content codings used, in the order preferred when a client accepts several
        /// equally (`encodings`: `br`, `gzip`). Default: both, Brotli first.
        public var encodings: [String] = ["br", "gzip"]

        /// The text formats a site serves; images, video and archives are compressed already.
        public static let defaultTypes = [
            "text/html", "text/css", "text/plain", "text/xml", "text/javascript", "text/csv", "text/markdown",
            "application/javascript", "application/json", "application/xml", "application/manifest+json",
            "application/ld+json", "application/rss+xml", "application/atom+xml", "application/wasm", "image/svg+xml",
        ]

        /// Compression of the default types, from 1 KiB, Brotli at 5 or gzip at 6.
        public init() {}

        /// Whether a response with this `Content-Type` value is compressed.
        public func compresses(contentType: String) -> Bool {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
            return mediaType.map(types.contains) ?? false
        }
    }
}
