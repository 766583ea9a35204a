import Foundation

extension HostRule {
    /// One entry of `map-local`: requests for a path (or under a directory path) answered with a
    /// local file instead of the origin (mitmproxy's `map_local`, Charles' and Proxyman's Map
    /// Local): a developer's stand-in for an endpoint or a build's static files.
    public struct LocalMapping: Hashable, Sendable {
        /// What answers.
        public enum Source: Hashable, Sendable {
            /// This file answers `path` exactly.
            case file(String)
            /// Files under this directory answer the paths under `path` (`index.html` a directory's).
            case directory(String)
        }

        /// The request path mapped: exact for a file; for a directory the paths under it.
        public var path: String
        public var source: Source

        /// A mapping of `path` to `source`.
        public init(path: String, source: Source) {
            self.path = path
            self.source = source
        }

        /// What a request path (as sent, percent-encoded, without its query) maps to.
        public enum Match: Hashable, Sendable {
            /// This local file (it may not exist: the request then gets a 404).
            case file(String)
            /// The path tries to leave the directory (`..`, an encoded `/` or NUL): refused.
            case refused(String)
        }

        /// The local file `requestPath` maps to, or nil when this mapping is not for it.
        public func match(_ requestPath: String) -> Match? {
            switch source {
            case .file(let file):
                return requestPath == path ? .file(file) : nil
            case .directory(let directory):
                let base = path.hasSuffix("/") ? path : path + "/"
                let rest: Substring
                if requestPath == String(base.dropLast()) {
                    rest = ""
                } else if requestPath.hasPrefix(base) {
                    rest = requestPath.dropFirst(base.count)
                } else {
                    return nil
                }
                var segments: [String] = []
                for raw in rest.split(separator: "/", omittingEmptySubsequences: true) {
                    guard let segment = String(raw).removingPercentEncoding, segment != "..", segment != ".",
                        !segment.contains("/"), !segment.contains("\0"), !segment.contains("\\")
                    else {
                        return .refused("the path \(requestPath) leaves the directory mapped to \(path)")
                    }
                    segments.append(segment)
                }
                if rest.isEmpty || rest.hasSuffix("/") { segments.append("index.html") }
                return .file(([directory] + segments).joined(separator: "/"))
            }
        }
    }
}
