/// The platform an image is for, `OS/ARCH[/VARIANT]` (`linux/amd64`, `linux/arm/v7`), as
/// `docker build --platform` and an OCI index's `platform` name it.
struct ImagePlatform: Hashable, CustomStringConvertible {
    var os: String
    var architecture: String
    var variant: String?

    /// Reads `OS/ARCH[/VARIANT]`; nil for anything else.
    init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard (2...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else { return nil }
        self.init(os: parts[0].lowercased(), architecture: parts[1].lowercased(), variant: parts.count == 3 ? parts[2].lowercased() : nil)
    }

    init(os: String, architecture: String, variant: String?) {
        self.os = os
        self.architecture = architecture
        self.variant = variant
    }

    /// The machine this runs on: Linux and its architecture, as Docker names it.
    static var host: ImagePlatform {
        #if arch(arm64)
            ImagePlatform(os: "linux", architecture: "arm64", variant: nil)
        #else
            ImagePlatform(os: "linux", architecture: "amd64", variant: nil)
        #endif
    }

    /// Whether an index entry for `other` is what a client on this platform pulls: the same OS
    /// and architecture, and the same variant when this one names one (`arm64`'s entry is
    /// usually `v8`, which a client asking for `linux/arm64` takes).
    func accepts(_ other: ImagePlatform) -> Bool {
        os == other.os && architecture == other.architecture && (variant == nil || variant == other.variant)
    }

    var description: String { "\(os)/\(architecture)" + (variant.map { "/\($0)" } ?? "") }
}
