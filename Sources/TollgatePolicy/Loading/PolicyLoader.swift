import Foundation
import TollgateSession
import Yams

/// Reads a policy file (CONTRACT.md "Configuration file") into a ``PolicyConfiguration``, or says
/// everything that is wrong with it.
///
/// Every problem is a ``Problem`` rendered `FILE:LINE: KEY: message`, and a load reports all of
/// them rather than the first: unknown keys (with the closest valid key), values of the wrong type,
/// bad durations, sizes, addresses, CIDRs, host patterns and pins, unknown session names, files
/// that cannot be read, a reverse listener without upstream, two listeners on one address, and YAML
/// syntax errors. No input makes it crash: the file size, nesting depth and alias expansion are
/// bounded before the document is walked.
///
/// Paths in the file: `~` is the home directory, and a relative path is relative to the file's own
/// directory. With ``checkFiles`` the files a rule or user points at (password files, client
/// identities, PEM root bundles) must exist and be readable; directories the proxy creates (cache,
/// CA, log file) are not checked.
///
/// ```swift
/// let problems = PolicyLoader().problems(inFile: path)   // tollgate check-config
/// let configuration = try PolicyLoader().load(contentsOf: path)
/// ```
public struct PolicyLoader: Sendable {
    /// Files larger than this are refused (1 MiB).
    public static let maximumFileSize = 1 << 20

    /// Whether files the configuration points at must exist and be readable. Default: true, as
    /// `tollgate check-config` runs it; tests of example files and `tollgate explain` on another
    /// machine turn it off.
    public var checkFiles: Bool
    /// The directory `~` stands for. Default: `$HOME`.
    public var homeDirectory: String?

    /// A loader.
    ///
    /// - Parameters:
    ///   - checkFiles: whether referenced files must be readable.
    ///   - homeDirectory: what `~` means; nil: `$HOME`, or no expansion when it is unset.
    public init(checkFiles: Bool = true, homeDirectory: String? = nil) {
        self.checkFiles = checkFiles
        self.homeDirectory = homeDirectory ?? ProcessInfo.processInfo.environment["HOME"]
    }

    /// Loads the file at `path`; relative paths inside it are relative to its directory.
    ///
    /// - Throws: ``Failure`` with every problem found.
    public func load(contentsOf path: String) throws(Failure) -> PolicyConfiguration {
        let (configuration, problems) = read(contentsOf: path)
        guard problems.isEmpty, let configuration else { throw Failure(problems: problems) }
        return configuration
    }

    /// Loads YAML text.
    ///
    /// - Parameters:
    ///   - yaml: the document.
    ///   - file: the name problems carry.
    ///   - baseDirectory: what relative paths in the document are relative to; nil leaves them relative.
    /// - Throws: ``Failure`` with every problem found.
    public func load(yaml: String, file: String, baseDirectory: String?) throws(Failure) -> PolicyConfiguration {
        let (configuration, problems) = read(yaml: yaml, file: file, baseDirectory: baseDirectory)
        guard problems.isEmpty, let configuration else { throw Failure(problems: problems) }
        return configuration
    }

    /// Every problem of the file at `path`, in line order; empty when it is valid
    /// (`tollgate check-config`).
    public func problems(inFile path: String) -> [Problem] {
        read(contentsOf: path).1
    }

    /// Every problem of a YAML document, in line order; empty when it is valid.
    public func problems(inYAML yaml: String, file: String, baseDirectory: String?) -> [Problem] {
        read(yaml: yaml, file: file, baseDirectory: baseDirectory).1
    }

    // MARK: Reading

    private func read(contentsOf path: String) -> (PolicyConfiguration?, [Problem]) {
        let bytes: [UInt8]
        switch PathResolution.readFile(path) {
        case .success(let read): bytes = read
        case .failure(let error):
            return (
                nil,
                [Problem(file: path, line: 1, key: "(file)", message: "cannot read the file: \(error.description)")]
            )
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return (nil, [Problem(file: path, line: 1, key: "(file)", message: "not UTF-8 text")])
        }
        var directory = PathResolution.directory(of: path)
        if !directory.hasPrefix("/"), let cwd = PathResolution.currentDirectory() {
            directory = directory == "." ? cwd : PathResolution.joined(cwd, directory)
        }
        return read(yaml: text, file: path, baseDirectory: directory)
    }

    private func read(yaml: String, file: String, baseDirectory: String?) -> (PolicyConfiguration?, [Problem]) {
        func only(_ line: Int, _ key: String, _ message: String) -> (PolicyConfiguration?, [Problem]) {
            (nil, [Problem(file: file, line: line, key: key, message: message)])
        }
        guard yaml.utf8.count <= PolicyLoader.maximumFileSize else {
            return only(
                1,
                "(file)",
                "larger than \(PolicyLoader.maximumFileSize >> 20) MiB; a policy file is far smaller"
            )
        }
        if let (line, message) = PolicyLoader.structuralProblem(yaml) { return only(line, "(yaml)", message) }
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            let (line, message) = PolicyLoader.describe(error, in: yaml)
            return only(line, "(yaml)", message)
        } catch {
            return only(1, "(yaml)", "cannot parse the document")
        }
        let context = LoadContext(file: file, loader: self, baseDirectory: baseDirectory)
        guard let root else { return (PolicyConfiguration(), []) }
        var budget = PolicyLoader.maximumNodes
        guard PolicyLoader.fits(root, budget: &budget) else {
            return only(1, "(document)", "more than \(PolicyLoader.maximumNodes) values once aliases are expanded")
        }
        let document = ConfigNode(node: root, path: "", context: context)
        if case .mapping = root {
        } else if !document.isNull {
            return only(root.mark?.line ?? 1, "(document)", "expected a mapping of sections (listen, cache, hosts, …)")
        }
        let configuration = PolicyConfiguration(document: document)
        checkAcrossSections(configuration, context)
        let problems = context.problems.enumerated()
            .sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }
            .map(\.element)
        return (configuration, problems)
    }

    /// The checks that need more than one section: session names used by rules, and addresses.
    private func checkAcrossSections(_ configuration: PolicyConfiguration, _ context: LoadContext) {
        let names = configuration.sessionNames
        for reference in context.sessionReferences where configuration.session(named: reference.name) == nil {
            let hint =
                KeySuggestion.closest(to: reference.name, in: names).map { "; did you mean \"\($0)\"?" }
                ?? "; sessions are: \(names.joined(separator: ", "))"
            context.report(line: reference.line, key: reference.key, "unknown session \"\(reference.name)\"\(hint)")
        }
        for use in context.connectToUses {
            guard let proxy = configuration.session(named: use.session)?.upstreamProxy else { continue }
            context.report(
                line: use.line, key: use.key,
                "session \"\(use.session)\" connects through upstream-proxy \(proxy.host):\(proxy.port): the parent makes the connection, "
                    + "so connect-to would not be used; send these hosts through a session without upstream-proxy"
            )
        }
        if configuration.access.trustedForwarders.isEmpty {
            for use in context.proxyProtocolUses {
                context.report(
                    line: use.line, key: use.key,
                    "a PROXY protocol header is believed only from the load balancers in access.trusted-forwarders, and it lists none: "
                        + "add the balancers' addresses there"
                )
            }
        }
        let addresses = context.addresses
        for (index, later) in addresses.enumerated() where later.address.port != 0 {
            guard let earlier = addresses[..<index].first(where: { PolicyLoader.overlap($0.address, later.address) })
            else { continue }
            let how = earlier.address == later.address ? "is already used" : "overlaps \(earlier.address)"
            context.report(
                line: later.line,
                key: later.key,
                "\(later.address) \(how) by \(earlier.key.replacingOccurrences(of: ".address", with: "")) (line \(earlier.line))"
            )
        }
    }

    /// Whether two listening addresses cannot both be bound: the same host and port, or one the
    /// wildcard address of the other's family on the same port.
    static func overlap(_ a: PolicyConfiguration.Address, _ b: PolicyConfiguration.Address) -> Bool {
        guard a.port == b.port, a.port != 0 else { return false }
        let (x, y) = (CIDR.addressBytes(a.host), CIDR.addressBytes(b.host))
        guard let x, let y else { return a.host.lowercased() == b.host.lowercased() }
        if x == y { return true }
        return x.count == y.count && (x.allSatisfy { $0 == 0 } || y.allSatisfy { $0 == 0 })
    }

    // MARK: Bounds

    static let maximumNodes = 100_000
    static let maximumNesting = 64

    /// Whether the tree has at most `budget` nodes (aliases count every time they are used).
    private static func fits(_ node: Node, budget: inout Int) -> Bool {
        budget -= 1
        guard budget >= 0 else { return false }
        switch node {
        case .scalar, .alias:
            return true
        case .sequence(let sequence):
            for element in sequence where !fits(element, budget: &budget) { return false }
            return true
        case .mapping(let mapping):
            for (key, value) in mapping where !fits(key, budget: &budget) || !fits(value, budget: &budget) {
                return false
            }
            return true
        }
    }

    /// A line the YAML parser should not be given: brackets nested past ``maximumNesting`` or a
    /// block indentation (with its `- ` and `? ` indicators) wider than 4 × ``maximumNesting``
    /// columns, which would make the recursive parser go too deep; or an alias, a list or a
    /// mapping used as a key, which the parser hashes whole while checking for duplicate keys, so
    /// that a small file of nested aliases would take forever. No sensible policy file has any.
    static func structuralProblem(_ text: String) -> (Int, String)? {
        let bytes = Array(text.utf8)
        var line = 1
        var depth = 0
        var quote: UInt8?
        var comment = false
        var atLineStart = true
        var indentation = 0
        var previous: UInt8 = 10
        var index = 0
        func isNameByte(_ byte: UInt8) -> Bool {
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 45
                || byte == 95
        }
        /// Whether a `:` and then a space, a line end or the end of the text follow `from`, after spaces.
        func keyFollows(_ from: Int) -> Bool {
            var next = from
            while next < bytes.count, bytes[next] == 32 { next += 1 }
            guard next < bytes.count, bytes[next] == UInt8(ascii: ":") else { return false }
            return next + 1 == bytes.count || [32, 9, 10, 13].contains(bytes[next + 1])
        }
        while index < bytes.count {
            let byte = bytes[index]
            defer {
                previous = byte
                index += 1
            }
            if byte == 10 {
                line += 1
                comment = false
                atLineStart = true
                indentation = 0
                continue
            }
            if atLineStart, quote == nil {
                if byte == 32 || byte == 9 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "?") {
                    indentation += 1
                    if indentation > 4 * maximumNesting {
                        return (line, "indented more than \(4 * maximumNesting) columns; nesting that deep is refused")
                    }
                    if byte == UInt8(ascii: "?"), index + 1 < bytes.count, [32, 9, 10].contains(bytes[index + 1]) {
                        return (line, "complex keys (\"? \") are not supported; a key is a plain string")
                    }
                    continue
                }
                atLineStart = false
            }
            if comment { continue }
            if let open = quote {
                if open == UInt8(ascii: "\""), byte == UInt8(ascii: "\\") {
                    if index + 1 < bytes.count, bytes[index + 1] == 10 { line += 1 }
                    index += 1  // an escaped character, perhaps a quote or a line break
                } else if byte == open, open == UInt8(ascii: "'"), index + 1 < bytes.count, bytes[index + 1] == open {
                    index += 1  // '' is a quote inside single quotes
                } else if byte == open {
                    quote = nil
                }
                continue
            }
            let tokenStart = [32, 9, 10, UInt8(ascii: "["), UInt8(ascii: "{"), UInt8(ascii: ",")].contains(previous)
            switch byte {
            case UInt8(ascii: "#") where tokenStart:
                comment = true
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                if tokenStart || previous == UInt8(ascii: ":") { quote = byte }
            case UInt8(ascii: "*") where tokenStart:
                var end = index + 1
                while end < bytes.count, isNameByte(bytes[end]) { end += 1 }
                if end > index + 1, keyFollows(end) {
                    return (line, "an alias cannot be a key; a key is a plain string")
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumNesting {
                    return (line, "brackets nested more than \(maximumNesting) deep; nesting that deep is refused")
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = max(0, depth - 1)
                if keyFollows(index + 1) {
                    return (line, "a list or a mapping cannot be a key; a key is a plain string")
                }
            default:
                break
            }
        }
        return nil
    }

    /// The line and one-line message of a YAML error, never the document it quotes.
    static func describe(_ error: YamlError, in yaml: String) -> (Int, String) {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = problem
            if let context, context.mark.line != mark.line {
                message += " (\(context.text) at line \(context.mark.line))"
            } else if let context {
                message = "\(context.text): \(problem)"
            }
            return (max(1, mark.line), message)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.map { "\"\($0)\"" }.joined(separator: ", ")
            return (max(1, context.mark.line), "duplicate key \(names) in one mapping")
        case .reader(let problem, let offset, _, _):
            var line = 1
            if let offset {
                line += yaml.utf8.prefix(max(0, offset)).filter { $0 == 10 }.count
            }
            return (line, "cannot read the text: \(problem)")
        default:
            return (1, "cannot parse the document")
        }
    }
}
