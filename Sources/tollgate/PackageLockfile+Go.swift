import Foundation
import TollgateHTTP

/// Go's `go.sum`: each `MODULE VERSION h1:…` line is a module zip the build may unpack, each
/// `MODULE VERSION/go.mod h1:…` a go.mod it reads; both from the module proxy as the go command
/// asks for them (`GOPROXY/MODULE/@v/VERSION.zip`, `.mod`, and the zip's `.info`), checked by
/// Go's own hashes (``GoModuleHash``).
extension PackageLockfile {
    /// Whether `text` is a go.sum: every line `MODULE VERSION h1:HASH`.
    static func isGoSum(_ text: String) -> Bool {
        let lines = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        return !lines.isEmpty && lines.allSatisfy { line in
            let fields = line.split(separator: " ")
            return fields.count == 3 && fields[1].hasPrefix("v") && fields[2].hasPrefix("h1:")
        }
    }

    /// The module proxy the go command would use: the first http(s) entry of `GOPROXY`, else
    /// `https://proxy.golang.org`.
    static func goModuleProxy(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let entries = (environment["GOPROXY"] ?? "").split(whereSeparator: { $0 == "," || $0 == "|" })
        let chosen = entries.first { $0.hasPrefix("https://") || $0.hasPrefix("http://") }.map(String.init) ?? "https://proxy.golang.org"
        return chosen.hasSuffix("/") ? String(chosen.dropLast()) : chosen
    }

    /// A module path or version as the go command puts it in a proxy URL: each capital letter as
    /// `!` and the letter in lower case (the protocol's escaping), the `!` percent-encoded as Go's
    /// URL paths encode it (`github.com/BurntSushi/toml` → `github.com/%21burnt%21sushi/toml`) — the
    /// cache keys a path byte for byte, so the warm asks for the very URL the build will.
    static func goEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character.isASCII, character.isUppercase {
                escaped += "%21" + character.lowercased()
            } else {
                escaped.append(character)
            }
        }
        return escaped
    }

    /// The artifacts of a go.sum's lines.
    static func readGoSum(_ text: String, proxy: String, _ add: (String, String, ArtifactDigest?) -> Void) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 3 else { continue }
            let module = fields[0]
            let base = "\(proxy)/\(goEscaped(module))/@v/"
            if fields[1].hasSuffix("/go.mod") {
                let version = String(fields[1].dropLast("/go.mod".count))
                add("\(module) \(version) go.mod", base + goEscaped(version) + ".mod", .goModFile(fields[2]))
            } else {
                let version = fields[1]
                add("\(module) \(version) info", base + goEscaped(version) + ".info", nil)
                add("\(module) \(version)", base + goEscaped(version) + ".zip", .goModuleZip(fields[2]))
            }
        }
    }
}
