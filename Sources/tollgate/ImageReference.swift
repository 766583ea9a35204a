import TollgateHTTP

/// A container image reference as `docker pull` and the OCI tools read one:
/// `[REGISTRY/]REPOSITORY[:TAG][@sha256:HEX]` (`alpine`, `ghcr.io/astral-sh/uv:0.4`,
/// `localhost:5000/team/app@sha256:…`).
///
/// The first path component names a registry when it has a `.` or a `:`, or is `localhost`;
/// otherwise the image is on Docker Hub, whose API is on `registry-1.docker.io` and whose
/// one-component names are under `library/`. Without a tag or digest the tag is `latest`.
struct ImageReference: Hashable, CustomStringConvertible {
    /// The registry as written (`docker.io` for Docker Hub).
    let registry: String
    /// The repository path on it (`library/alpine`).
    let repository: String
    /// The tag (nil when only a digest is given).
    let tag: String?
    /// The pinned manifest digest, `sha256:` and 64 lowercase hex digits.
    let digest: String?

    /// Why a reference cannot be read.
    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads `text`.
    init(parsing text: String) throws(ParseError) {
        var rest = Substring(text)
        var digest: String?
        if let at = rest.firstIndex(of: "@") {
            let pinned = String(rest[rest.index(after: at)...])
            guard Self.isSHA256Digest(pinned) else {
                throw ParseError(description: "'\(pinned)' is not a sha256: digest of 64 hex digits")
            }
            digest = pinned
            rest = rest[..<at]
        }
        var tag: String?
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("/") {
            tag = String(rest[rest.index(after: colon)...])
            rest = rest[..<colon]
        }
        if let tag, !Self.isTag(tag) { throw ParseError(description: "'\(tag)' is not a tag") }
        var components = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var registry = "docker.io"
        if components.count > 1, components[0].contains(".") || components[0].contains(":") || components[0] == "localhost" {
            registry = components.removeFirst()
        }
        if registry == "index.docker.io" { registry = "docker.io" }
        if registry == "docker.io", components.count == 1 { components.insert("library", at: 0) }
        guard !components.isEmpty, components.allSatisfy(Self.isPathComponent) else {
            throw ParseError(description: "'\(rest)' is not a repository name (lowercase letters, digits and . _ - between them, / between components)")
        }
        self.registry = registry
        self.repository = components.joined(separator: "/")
        self.tag = tag ?? (digest == nil ? "latest" : nil)
        self.digest = digest
    }

    /// The host (and port) the registry's API is on.
    var apiHost: String { registry == "docker.io" ? "registry-1.docker.io" : registry }

    /// `https://HOST/v2/`: the registry's version check, which clients ask first.
    var pingURL: HTTPURL? { HTTPURL(string: "https://\(apiHost)/v2/") }

    /// The manifest by `reference` (a tag or a digest).
    func manifestURL(_ reference: String) -> HTTPURL? {
        HTTPURL(string: "https://\(apiHost)/v2/\(repository)/manifests/\(reference)")
    }

    /// A blob (a config or a layer) by digest.
    func blobURL(_ digest: String) -> HTTPURL? {
        HTTPURL(string: "https://\(apiHost)/v2/\(repository)/blobs/\(digest)")
    }

    /// The full form: `docker.io/library/alpine:3.20`, `…@sha256:…`.
    var description: String {
        "\(registry)/\(repository)" + (tag.map { ":\($0)" } ?? "") + (digest.map { "@\($0)" } ?? "")
    }

    /// `sha256:` and 64 lowercase hexadecimal digits.
    static func isSHA256Digest(_ text: String) -> Bool {
        guard text.hasPrefix("sha256:") else { return false }
        let hex = text.utf8.dropFirst(7)
        return hex.count == 64 && hex.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// distribution's tag grammar: `[\w][\w.-]{0,127}`.
    private static func isTag(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...128).contains(bytes.count), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// A path component: lowercase letters and digits, separated by `.`, `_`, `__` or dashes.
    private static func isPathComponent(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, let last = bytes.last, isLowerAlphanumeric(first), isLowerAlphanumeric(last) else { return false }
        return bytes.allSatisfy { isLowerAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLowerAlphanumeric(byte) || (65...90).contains(byte)
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...122).contains(byte)
    }
}
