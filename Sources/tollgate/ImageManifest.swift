import Foundation

/// A registry's manifest as `tollgate warm` reads it: an index (OCI image index, Docker manifest
/// list) naming a manifest per platform, or an image manifest naming its config and layers.
enum ImageManifest {
    /// An index's entries: each manifest's digest and, where given, its platform.
    case index([(digest: String, platform: ImagePlatform?)])
    /// An image: the digests of its config and its layers, in order.
    case image(config: String, layers: [String])

    /// The media types a client accepts for a manifest, as the warm asks for them (the order
    /// containerd and skopeo send).
    static let acceptedTypes = [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]

    /// Why a body is not a manifest the warm can read.
    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads a manifest body (JSON); an entry whose digest is not `sha256:` is an error: the
    /// warm checks every body it stores against its digest.
    init(json body: Data) throws(ReadError) {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw ReadError(description: "the manifest is not a JSON object")
        }
        func digest(of descriptor: Any?) throws(ReadError) -> String {
            guard let value = (descriptor as? [String: Any])?["digest"] as? String, ImageReference.isSHA256Digest(value) else {
                throw ReadError(description: "a descriptor without a sha256 digest: \(String(describing: descriptor))")
            }
            return value
        }
        if let entries = object["manifests"] as? [Any] {
            var found: [(digest: String, platform: ImagePlatform?)] = []
            for entry in entries {
                let platform = ((entry as? [String: Any])?["platform"] as? [String: Any]).flatMap { platform -> ImagePlatform? in
                    guard let os = platform["os"] as? String, let architecture = platform["architecture"] as? String else { return nil }
                    return ImagePlatform(os: os, architecture: architecture, variant: platform["variant"] as? String)
                }
                found.append((try digest(of: entry), platform))
            }
            self = .index(found)
            return
        }
        guard object["config"] != nil, let layers = object["layers"] as? [Any] else {
            let schema = object["schemaVersion"].map { "schema version \($0)" } ?? "no schema version"
            throw ReadError(description: "neither an image index nor an image manifest (\(schema); schema 1 manifests are not read)")
        }
        var digests: [String] = []
        for layer in layers { digests.append(try digest(of: layer)) }
        self = .image(config: try digest(of: object["config"]), layers: digests)
    }
}
