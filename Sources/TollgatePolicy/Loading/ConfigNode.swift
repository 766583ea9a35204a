import Foundation
import Yams

/// What one load collects besides the model: the problems, and the facts checked across
/// sections once everything is read (listener addresses, session names used by rules).
final class LoadContext {
    let file: String
    let loader: PolicyLoader
    let baseDirectory: String?
    var problems: [PolicyLoader.Problem] = []
    /// Every listener and admin address, for the one-address-one-listener check.
    var addresses: [(address: PolicyConfiguration.Address, line: Int, key: String)] = []
    /// Every `hosts[].session` value, for the unknown-session check.
    var sessionReferences: [(name: String, line: Int, key: String)] = []
    /// Each rule's `connect-to`, with its rule's session: refused where that session connects
    /// through an `upstream-proxy`.
    var connectToUses: [(session: String, line: Int, key: String)] = []
    /// Each `listen[].proxy-protocol: true`: it needs `access.trusted-forwarders`.
    var proxyProtocolUses: [(line: Int, key: String)] = []

    init(file: String, loader: PolicyLoader, baseDirectory: String?) {
        self.file = file
        self.loader = loader
        self.baseDirectory = baseDirectory
    }

    func report(line: Int, key: String, _ message: String) {
        problems.append(PolicyLoader.Problem(file: file, line: line, key: key, message: message))
    }

    /// The path as the process will open it (`~` expanded, relative to the file's directory).
    func resolve(_ path: String) -> String {
        PathResolution.resolve(path, baseDirectory: baseDirectory, homeDirectory: loader.homeDirectory)
    }
}

/// A YAML node being read as part of the policy file: the node, its key path for messages, and the
/// load it belongs to. Every typed accessor reports a problem and returns nil when the node is not
/// of the expected form, so a section's reader can go on to the next key and report that too.
struct ConfigNode {
    let node: Node
    let path: String
    let context: LoadContext

    /// The node's 1-based line.
    var line: Int { node.mark?.line ?? 1 }

    func report(_ message: String) { context.report(line: line, key: path, message) }

    func child(_ key: String, _ node: Node) -> ConfigNode {
        ConfigNode(node: node, path: path.isEmpty ? key : "\(path).\(key)", context: context)
    }

    func element(_ index: Int, _ node: Node) -> ConfigNode {
        ConfigNode(node: node, path: "\(path)[\(index)]", context: context)
    }

    /// The node's resolved YAML tag (`tag:yaml.org,2002:int`, …).
    var tagName: Tag.Name { Tag.Name(rawValue: node.tag.description) }

    /// `~`, `null`, or nothing at all after the colon.
    var isNull: Bool {
        if case .scalar = node { return tagName == .null }
        return false
    }

    private var describedKind: String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            if isNull { return "nothing" }
            let text = scalar.string.count > 40 ? scalar.string.prefix(37) + "..." : Substring(scalar.string)
            return "\"\(text)\""
        }
    }

    func typeError(_ expected: String) { report("expected \(expected), got \(describedKind)") }

    // MARK: Scalars

    /// The text of a scalar, whatever YAML type it resolves to (`off`, `123` and `yes` are text here).
    func string(_ expected: String = "a string") -> String? {
        guard case .scalar(let scalar) = node, !isNull else {
            typeError(expected)
            return nil
        }
        return scalar.string
    }

    /// A non-empty string.
    func nonEmptyString(_ expected: String = "a string") -> String? {
        guard let text = string(expected) else { return nil }
        guard !text.isEmpty else {
            report("must not be empty")
            return nil
        }
        return text
    }

    func bool() -> Bool? {
        guard case .scalar = node, tagName == .bool, let value = node.bool else {
            typeError("true or false")
            return nil
        }
        return value
    }

    func int(in range: ClosedRange<Int>) -> Int? {
        guard case .scalar = node, tagName == .int, let value = node.int else {
            typeError("a whole number")
            return nil
        }
        guard range.contains(value) else {
            report("must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
            return nil
        }
        return value
    }

    /// A duration (`500ms`, `30s`, `10m`, `2h`, `7d`), more than zero unless `allowZero`.
    func duration(allowZero: Bool = false) -> Duration? {
        guard let text = string("a duration such as 30s") else { return nil }
        guard let value = ConfigValueParsers.duration(text) else {
            var hint = "expected a whole number and a unit: 500ms, 30s, 10m, 2h or 7d"
            if text.allSatisfy({ $0.isASCII && $0.isNumber }) && !text.isEmpty { hint = "a unit is needed (\(text)s?)" }
            report("bad duration \"\(text)\"; \(hint)")
            return nil
        }
        guard allowZero || value > .zero else {
            report("must be longer than zero")
            return nil
        }
        return value
    }

    /// A size (`512KiB`, `100MiB`, `1GiB`, or bytes), more than zero.
    func size() -> Int64? {
        guard let text = string("a size such as 100MiB") else { return nil }
        guard let value = ConfigValueParsers.size(text) else {
            var hint = "expected bytes or a number with KiB, MiB, GiB or TiB"
            for (decimal, binary) in [
                ("KB", "KiB"), ("MB", "MiB"), ("GB", "GiB"), ("TB", "TiB"), ("K", "KiB"),
                ("M", "MiB"), ("G", "GiB"), ("T", "TiB"),
            ] where text.uppercased().hasSuffix(decimal) {
                let number = text.dropLast(decimal.count)
                if !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }) {
                    hint = "sizes use binary units; did you mean \(number)\(binary)?"
                    break
                }
            }
            report("bad size \"\(text)\"; \(hint)")
            return nil
        }
        guard value > 0 else {
            report("must be more than zero")
            return nil
        }
        return value
    }

    /// One of `words`, exactly; the message suggests the closest.
    func word(_ words: [String]) -> String? {
        let expected = words.count == 2 ? "\(words[0]) or \(words[1])" : "one of \(words.joined(separator: ", "))"
        guard let text = string(expected) else { return nil }
        guard words.contains(text) else {
            report(
                "unknown value \"\(text)\"; expected \(expected)\(KeySuggestion.hint(for: text, in: words, listing: false))"
            )
            return nil
        }
        return text
    }

    /// A case of a string enumeration, by its raw value.
    func choice<Choice: RawRepresentable & CaseIterable>(_: Choice.Type) -> Choice? where Choice.RawValue == String {
        word(Choice.allCases.map(\.rawValue)).flatMap(Choice.init(rawValue:))
    }

    /// A path to a file that must be readable (when the loader checks files), resolved.
    func readableFile() -> String? {
        guard let written = nonEmptyString("a file path") else { return nil }
        let resolved = context.resolve(written)
        if context.loader.checkFiles, let problem = PathResolution.problemReadingFile(resolved) {
            let shown = resolved == written ? "\"\(written)\"" : "\"\(written)\" (\(resolved))"
            report("cannot read \(shown): \(problem)")
        }
        return resolved
    }

    /// A path to a directory that must exist (when the loader checks files), resolved.
    func existingDirectory() -> String? {
        guard let written = nonEmptyString("a directory path") else { return nil }
        let resolved = context.resolve(written)
        var isDirectory: ObjCBool = false
        if context.loader.checkFiles, !FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory) || !isDirectory.boolValue {
            let shown = resolved == written ? "\"\(written)\"" : "\"\(written)\" (\(resolved))"
            report("\(shown) is not a directory")
        }
        return resolved
    }

    // MARK: Collections

    /// The entries of a mapping whose keys must be among `keys` (nil: any key). `null` reads as an
    /// empty mapping. Unknown keys are reported with the closest valid key.
    func mapping(keys: [String]?) -> ConfigMapping? {
        if isNull { return ConfigMapping(owner: self, entries: []) }
        guard case .mapping(let mapping) = node else {
            typeError("a mapping")
            return nil
        }
        var entries: [(key: String, node: ConfigNode)] = []
        var seen: Set<String> = []
        collect(mapping, into: &entries, seen: &seen, depth: 0, keys: keys)
        return ConfigMapping(owner: self, entries: entries)
    }

    private func collect(
        _ mapping: Node.Mapping,
        into entries: inout [(key: String, node: ConfigNode)],
        seen: inout Set<String>,
        depth: Int,
        keys: [String]?
    ) {
        var merges: [Node] = []
        for (keyNode, value) in mapping {
            let keyLine = keyNode.mark?.line ?? line
            guard case .scalar(let keyScalar) = keyNode, Tag.Name(rawValue: keyNode.tag.description) != .null else {
                context.report(line: keyLine, key: path.isEmpty ? "(document)" : path, "a key must be a plain string")
                continue
            }
            let key = keyScalar.string
            if key == "<<" && keyScalar.style == .plain {
                merges.append(value)
                continue
            }
            guard !seen.contains(key) else { continue }  // explicit keys win over merged ones
            seen.insert(key)
            // Top-level `x-…` keys are extension fields, a place for anchors to merge from
            // (`x-defaults: &defaults {…}`), as in Compose files.
            if path.isEmpty, key.hasPrefix("x-") { continue }
            if let keys, !keys.contains(key) {
                let keyPath = path.isEmpty ? key : "\(path).\(key)"
                context.report(
                    line: keyLine,
                    key: keyPath,
                    "unknown key \"\(key)\"\(KeySuggestion.hint(for: key, in: keys))"
                )
                continue
            }
            entries.append((key, child(key, value)))
        }
        // YAML merge keys (`<<: *defaults`, `<<: [*a, *b]`): earlier mappings win, explicit keys win.
        for merge in merges {
            guard depth < 8 else {
                report("merge keys nested too deeply")
                return
            }
            switch merge {
            case .mapping(let merged):
                collect(merged, into: &entries, seen: &seen, depth: depth + 1, keys: keys)
            case .sequence(let sequence):
                for case .mapping(let merged) in sequence {
                    collect(merged, into: &entries, seen: &seen, depth: depth + 1, keys: keys)
                }
            default:
                context.report(
                    line: merge.mark?.line ?? line,
                    key: path,
                    "<< must merge a mapping or a list of mappings"
                )
            }
        }
    }

    /// The elements of a list; `null` reads as an empty list.
    func list(_ expected: String = "a list") -> [ConfigNode]? {
        if isNull { return [] }
        guard case .sequence(let sequence) = node else {
            typeError(expected)
            return nil
        }
        return sequence.enumerated().map { element($0.offset, $0.element) }
    }

    /// A list, or a single scalar standing for a list of one (`match: "*.example.com"`).
    func scalarOrList(_ expected: String) -> [ConfigNode]? {
        if case .scalar = node, !isNull { return [self] }
        return list(expected)
    }
}

/// The entries of a mapping read by ``ConfigNode/mapping(keys:)``, in file order.
struct ConfigMapping {
    let owner: ConfigNode
    let entries: [(key: String, node: ConfigNode)]

    subscript(key: String) -> ConfigNode? { entries.first { $0.key == key }?.node }

    /// Reports `key` as missing (at the mapping's line) when it is absent; returns its node.
    func required(_ key: String) -> ConfigNode? {
        if let node = self[key] { return node }
        owner.report("missing key \"\(key)\"")
        return nil
    }
}
