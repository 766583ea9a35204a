import Foundation
import TollgateHTTP
import Yams

/// pnpm's `pnpm-lock.yaml` (lockfile versions 5 to 9): each package of `packages` with its
/// `resolution` — a registry package's `integrity`, its tarball at the npm registry's URL
/// (`REGISTRY/NAME/-/BASENAME-VERSION.tgz`, what pnpm asks for), or an explicit `tarball`.
/// The registry is `npm_config_registry` in the warm's environment (as npm and pnpm read it),
/// else `https://registry.npmjs.org/`. Git and directory resolutions have no tarball to fetch.
extension PackageLockfile {
    /// Whether `text` is a pnpm lockfile: YAML with `lockfileVersion` at the top.
    static func isPNPMLock(_ text: String) -> Bool {
        text.hasPrefix("lockfileVersion:") || text.contains("\nlockfileVersion:")
    }

    /// The npm registry packages are fetched from.
    static func npmRegistry(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let registry = environment["npm_config_registry"] ?? environment["NPM_CONFIG_REGISTRY"] ?? "https://registry.npmjs.org/"
        return registry.hasSuffix("/") ? registry : registry + "/"
    }

    /// A `packages` key's name and version: `name@1.0.0` (lockfile 9), `/name@1.0.0(peer@2)` (6),
    /// `/name/1.0.0_peer@2` (5, `slashVersion`); scoped names keep their `@scope/`.
    static func pnpmNameAndVersion(_ key: String, slashVersion: Bool) -> (name: String, version: String)? {
        var key = Substring(key)
        if key.hasPrefix("/") { key = key.dropFirst() }
        let scoped = key.hasPrefix("@")
        let body = scoped ? key.dropFirst() : key
        let name: Substring
        var version: Substring
        if slashVersion {
            // NAME/VERSION, peers after an underscore (a version has none).
            guard let slash = body.lastIndex(of: "/") else { return nil }
            name = body[..<slash]
            version = body[body.index(after: slash)...]
            if let underscore = version.firstIndex(of: "_") { version = version[..<underscore] }
        } else {
            // NAME@VERSION, peers in parentheses.
            let unpeered = body.firstIndex(of: "(").map { body[..<$0] } ?? body
            guard let at = unpeered.lastIndex(of: "@") else { return nil }
            name = unpeered[..<at]
            version = unpeered[unpeered.index(after: at)...]
        }
        guard !name.isEmpty, !version.isEmpty, name.contains("/") == scoped else { return nil }
        return ((scoped ? "@" : "") + name, String(version))
    }

    static func readPNPM(_ text: String, source: String, registry: String, _ add: Add) throws {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw CommandFailure.user("\(source): not YAML: \(error)")
        }
        guard let packages = root?.mapping?["packages"]?.mapping else { return }
        // `5.4` (a number) or `'6.0'`, `'9.0'`: before 6, keys are NAME/VERSION.
        let version = root?.mapping?["lockfileVersion"]?.string ?? ""
        let slashVersion = (Double(version) ?? 9) < 6
        for (keyNode, value) in packages {
            guard let key = keyNode.string, let resolution = value.mapping?["resolution"]?.mapping else { continue }
            let integrityText = resolution["integrity"]?.string
            let integrity = integrityText.flatMap(SubresourceIntegrity.init)
            if let tarball = resolution["tarball"]?.string {
                add(key, tarball, integrity, integrityText)
                continue
            }
            guard integrityText != nil, let (name, version) = pnpmNameAndVersion(key, slashVersion: slashVersion) else { continue }
            let basename = name.split(separator: "/").last.map(String.init) ?? name
            add("\(name)@\(version)", "\(registry)\(name)/-/\(basename)-\(version).tgz", integrity, integrityText)
        }
    }
}
