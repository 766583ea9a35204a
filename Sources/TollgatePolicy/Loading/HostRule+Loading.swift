import Foundation
import TollgateHTTP
import Yams
import TollgateSession
import TollgateTLS

extension HostRule {
    static let keys = [
        "match", "session", "trust", "client-identity", "credentials", "cache", "intercept", "http2", "connect-to", "connect-to-check",
        "request-headers", "response-headers", "map-local", "map-remote", "compress",
    ]

    /// Reads one entry of `hosts`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `match` | host pattern, or a list of them | required |
    /// | `session` | a session name | `default` |
    /// | `trust` | mapping (``Trust``) | system roots, no pins |
    /// | `client-identity` | `{ certificate: PATH, key: PATH }` | none |
    /// | `credentials` | list of credentials | none |
    /// | `cache` | mapping (``CacheOverride``) | store allowed, key unchanged |
    /// | `intercept` | boolean | `false` |
    /// | `http2` | `auto` \| `off` | `auto` |
    /// | `connect-to` | `HOST:PORT [weight=N] [backup]`, or a list of them | none |
    /// | `connect-to-check` | duration, 100ms or more, or a mapping (``loadConnectToCheck(_:hasTargets:)``) | none: no health checks |
    /// | `request-headers`, `response-headers` | `{ set, add, remove }` (``HeaderEdits``) | none |
    /// | `map-local` | list of `{ path, file }` or `{ path, directory }` (``LocalMapping``) | none |
    /// | `map-remote` | list of `{ path, to }` (``RemoteMapping``) | none |
    /// | `compress` | `true`, `false` or `{ types, min-size, level }` (``Compression``) | none |
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: HostRule.keys) else { return nil }
        var patterns: [HostPattern] = []
        if let matchNode = entry.required("match"),
            let items = matchNode.scalarOrList("a host pattern or a list of them")
        {
            for item in items {
                guard let text = item.nonEmptyString("a host pattern") else { continue }
                do { patterns.append(try HostPattern(text)) } catch { item.report(error.description) }
            }
            if items.isEmpty { matchNode.report("list at least one host pattern") }
        }
        self.init(patterns: patterns)
        sourceLine = node.line
        if let sessionNode = entry["session"], let name = sessionNode.nonEmptyString("a session name") {
            session = name
            node.context.sessionReferences.append((name, sessionNode.line, sessionNode.path))
        }
        if let trustNode = entry["trust"] { trust = Trust(node: trustNode) }
        if let identityNode = entry["client-identity"] { clientIdentity = ClientIdentity(node: identityNode) }
        if let items = entry["credentials"]?.list("a list of credentials") {
            credentials = items.compactMap(Credential.init(node:))
        }
        if let cacheNode = entry["cache"] { cache = CacheOverride(node: cacheNode) }
        if let value = entry["intercept"]?.bool() { intercept = value }
        if let use = entry["http2"]?.choice(HTTP2Use.self) { http2 = use }
        if let targetsNode = entry["connect-to"], let items = targetsNode.scalarOrList("HOST:PORT or a list of them") {
            connectTo = items.compactMap(Self.connectTarget)
            if items.isEmpty { targetsNode.report("list at least one HOST:PORT (or leave connect-to out)") }
            if !connectTo.isEmpty, connectTo.allSatisfy(\.isBackup) {
                targetsNode.report("every target is a backup, so none would be used first: leave backup off at least one")
            }
            node.context.connectToUses.append((session, targetsNode.line, targetsNode.path))
        }
        if let checkNode = entry["connect-to-check"] {
            loadConnectToCheck(checkNode, hasTargets: entry["connect-to"] != nil)
        }
        if let editsNode = entry["request-headers"] {
            requestHeaders = HeaderEdits(node: editsNode, reserved: HeaderEdits.reservedInRequests, by: "the proxy (framing, hops, Host, loop detection)")
        }
        if let editsNode = entry["response-headers"] {
            responseHeaders = HeaderEdits(node: editsNode, reserved: HeaderEdits.reservedInResponses, by: "the proxy (framing, hops, Via, Cache-Status)")
        }
        if let items = entry["map-local"]?.list("a list of { path, file } or { path, directory }") {
            mapLocal = items.compactMap(LocalMapping.init(node:))
        }
        if let items = entry["map-remote"]?.list("a list of { path, to }") {
            mapRemote = items.compactMap(RemoteMapping.init(node:))
        }
        if let compressNode = entry["compress"] { compress = Compression.read(compressNode) }
        guard !patterns.isEmpty else { return nil }
    }
}

extension HostRule.LocalMapping {
    /// Reads one entry of `map-local`: `path` (absolute, no query) and exactly one of `file` (a
    /// readable file) and `directory` (an existing directory).
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["path", "file", "directory"]) else { return nil }
        var path = entry.required("path")?.nonEmptyString("a request path such as /api/flags")
        if let text = path, !text.hasPrefix("/") || text.contains("?") || text.contains("#") {
            entry["path"]?.report("'\(text)' is not a request path: it starts with / and has no query or fragment")
            path = nil
        }
        let source: Source?
        switch (entry["file"], entry["directory"]) {
        case (let fileNode?, nil):
            source = fileNode.readableFile().map(Source.file)
        case (nil, let directoryNode?):
            source = directoryNode.existingDirectory().map(Source.directory)
        default:
            node.report("give exactly one of file and directory")
            source = nil
        }
        guard let path, let source else { return nil }
        self.init(path: path, source: source)
    }
}

extension HostRule.RemoteMapping {
    /// Reads one entry of `map-remote`: `path` (absolute, no query; default `/`) and `to` (an
    /// absolute http(s) URL without query or fragment).
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["path", "to"]) else { return nil }
        var path: String? = "/"
        if let pathNode = entry["path"] {
            path = pathNode.nonEmptyString("a request path such as /api/")
            if let text = path, !text.hasPrefix("/") || text.contains("?") || text.contains("#") {
                pathNode.report("'\(text)' is not a request path: it starts with / and has no query or fragment")
                path = nil
            }
        }
        var to: HTTPURL?
        if let toNode = entry.required("to"), let text = toNode.nonEmptyString("a URL such as http://127.0.0.1:8080/api/") {
            if let url = HTTPURL(string: text), url.scheme == "http" || url.scheme == "https", url.query == nil, !text.contains("#") {
                to = url
            } else {
                toNode.report("'\(text)' is not an absolute http(s) URL without a query, such as http://127.0.0.1:8080/api/")
            }
        }
        guard let path, let to else { return nil }
        self.init(path: path, to: to)
    }
}

extension HostRule {
    /// One entry of `connect-to`: `HOST:PORT` or `[IPv6]:PORT`, a port from 1, then as nginx's
    /// `server` lines write them `weight=N` (1 to 256) and `backup`, in any order.
    private static func connectTarget(_ item: ConfigNode) -> ConnectionTarget? {
        guard let text = item.nonEmptyString("HOST:PORT") else { return nil }
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let first = words.first else { return nil }
        var target: ConnectionTarget
        do throws(PolicyConfiguration.Address.ParseError) {
            let address = try PolicyConfiguration.Address.parse(first)
            guard address.port > 0 else {
                item.report("\"\(first)\": the port must be a number from 1 to 65535")
                return nil
            }
            target = ConnectionTarget(host: address.host, port: address.port)
        } catch {
            // A space inside what was meant as one address ("a b:80"): said of the whole.
            if words.count > 1, case .failure(let whole) = Result(catching: { () throws(PolicyConfiguration.Address.ParseError) in
                try PolicyConfiguration.Address.parse(text)
            }) {
                item.report(whole.description)
            } else {
                item.report(error.description)
            }
            return nil
        }
        var seen: Set<String> = []
        for word in words.dropFirst() {
            let name = word.hasPrefix("weight=") ? "weight" : word
            guard seen.insert(name).inserted else {
                item.report("\"\(text)\": \(name) is given twice")
                return nil
            }
            if word == "backup" {
                target.isBackup = true
            } else if word.hasPrefix("weight=") {
                guard let weight = Int(word.dropFirst("weight=".count)), (1...256).contains(weight) else {
                    item.report("\"\(text)\": \(word): a weight is a whole number from 1 to 256")
                    return nil
                }
                target.weight = weight
            } else {
                item.report("\"\(text)\": \"\(word)\" is not weight=N or backup (write HOST:PORT [weight=N] [backup])")
                return nil
            }
        }
        return target
    }
}

extension HostRule.Trust {
    static let keys = ["roots", "crls", "pins", "pin-mode", "pins-expire", "ocsp", "insecure", "deny"]

    /// Reads a rule's `trust`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `roots` | `system`, a PEM bundle path, `{ file: PATH, optional: true }`, or a list of these | `system` |
    /// | `crls` | a CRL file path (PEM or DER), or a list of them | none |
    /// | `pins` | list of `sha256/BASE64` | none |
    /// | `pin-mode` | `enforce` \| `report` | `enforce` |
    /// | `pins-expire` | date `YYYY-MM-DD` (UTC) or RFC 3339 time | none |
    /// | `ocsp` | `off` \| `check` \| `require`: the server's stapled OCSP response | `off` |
    /// | `insecure` | boolean | `false` |
    /// | `deny` | boolean | `false` |
    /// A roots entry written as a mapping: `{ file: PATH }`, or `{ file: PATH, optional: true }`
    /// for a file used when it exists (checked only then) and skipped when it does not.
    private static func readRootsFile(_ item: ConfigNode, into roots: inout Roots) {
        guard let entry = item.mapping(keys: ["file", "optional"]), let fileNode = entry.required("file") else { return }
        let optional = entry["optional"]?.bool() ?? false
        guard optional else {
            if let path = fileNode.readableFile() { roots.bundles.append(path) }
            return
        }
        guard let written = fileNode.nonEmptyString("a file path") else { return }
        let resolved = item.context.resolve(written)
        if FileManager.default.fileExists(atPath: resolved), let path = fileNode.readableFile() {
            roots.optionalBundles.append(path)
        } else {
            roots.optionalBundles.append(resolved)
        }
    }

    /// The entries of `roots`: one scalar or `{ file: … }` mapping, or a list of them.
    private static func rootsItems(_ node: ConfigNode) -> [ConfigNode]? {
        if case Node.mapping = node.node { return [node] }
        return node.scalarOrList("system, a PEM file, { file: PATH, optional: true }, or a list of these")
    }

    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: HostRule.Trust.keys) else { return }
        if let rootsNode = entry["roots"], let items = Self.rootsItems(rootsNode) {
            var roots = Roots(includesSystem: false)
            for item in items {
                if case Node.mapping = item.node {
                    Self.readRootsFile(item, into: &roots)
                    continue
                }
                guard let text = item.nonEmptyString("system or a PEM file path") else { continue }
                if text == "system" {
                    roots.includesSystem = true
                } else if let path = item.readableFile() {
                    roots.bundles.append(path)
                }
            }
            if items.isEmpty { rootsNode.report("list system, a PEM file, or both") }
            self.roots = roots
        }
        if let crlsNode = entry["crls"] {
            crls = Self.revocationListFiles(crlsNode) ?? []
        }
        if let pinsNode = entry["pins"] { pins = Self.readPins(pinsNode) }
        if let mode = entry["pin-mode"]?.choice(PinMode.self) { pinMode = mode }
        if let check = entry["ocsp"]?.choice(OCSPCheck.self) { ocsp = check }
        if let expireNode = entry["pins-expire"], let text = expireNode.nonEmptyString("a date YYYY-MM-DD") {
            if let date = HostRule.Trust.parseDate(text) {
                pinsExpire = date
                if pins.isEmpty { expireNode.report("pins-expire without pins has nothing to expire") }
            } else {
                expireNode.report(
                    "bad date \"\(text)\"; expected YYYY-MM-DD or an RFC 3339 time such as 2026-01-31T12:00:00Z"
                )
            }
        }
        if let value = entry["insecure"]?.bool() { insecure = value }
        if let value = entry["deny"]?.bool() { deny = value }
    }

    /// The pins of a `pins` setting (one `sha256/BASE64` or a list), each checked.
    static func readPins(_ node: ConfigNode) -> [SPKIPin] {
        guard let items = node.scalarOrList("a list of sha256/BASE64 pins") else { return [] }
        return items.compactMap { item in
            guard let text = item.nonEmptyString("a pin sha256/BASE64") else { return nil }
            do {
                return try SPKIPin(text)
            } catch let error as SPKIPin.ParseError {
                item.report(error.message)
            } catch {
                item.report("\(error)")
            }
            return nil
        }
    }

    /// The files of a `crls` setting (one path or a list), each read now when the loader checks
    /// files, so a damaged list is a `check-config` error at its line. A list past its
    /// `nextUpdate` is not: it fails the connections it covers (closed), not the whole file.
    static func revocationListFiles(_ node: ConfigNode) -> [String]? {
        guard let items = node.scalarOrList("a CRL file path or a list of them") else { return nil }
        if items.isEmpty { node.report("list at least one CRL file (or leave crls out)") }
        return items.compactMap { item in
            guard let path = item.readableFile() else { return nil }
            guard item.context.loader.checkFiles, PathResolution.problemReadingFile(path) == nil else { return path }
            do {
                _ = try CertificateRevocationList.lists(inFile: path)
            } catch {
                item.report("cannot read the CRLs in \(path): \(error)")
            }
            return path
        }
    }

    /// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 date-time.
    static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        if text.count == 10 {
            formatter.formatOptions = [.withFullDate, .withDashSeparatorInDate]
        } else {
            formatter.formatOptions = [.withInternetDateTime]
        }
        guard let date = formatter.date(from: text) else {
            if text.count != 10 {
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                return formatter.date(from: text)
            }
            return nil
        }
        return date
    }
}

extension HostRule.ClientIdentity {
    /// Reads a rule's `client-identity`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `certificate` | PEM file path | required |
    /// | `key` | PEM file path | required |
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["certificate", "key"]) else { return nil }
        let certificate = entry.required("certificate")?.readableFile()
        let key = entry.required("key")?.readableFile()
        guard let certificate, let key else { return nil }
        self.init(certificate: certificate, key: key)
    }
}

extension HostRule.Credential {
    /// Reads one entry of a rule's `credentials`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `realm` | string | none: any realm of the host |
    /// | `user` | string | required |
    /// | `password-env` | environment variable name | one of `password-env`, `password-file` is required |
    /// | `password-file` | file path | |
    /// | `persistence` | `none` \| `session` \| `permanent` | `session` |
    init?(node: ConfigNode) {
        let keys = ["realm", "user", "password-env", "password-file", "persistence"]
        guard let entry = node.mapping(keys: keys) else { return nil }
        let realm = entry["realm"]?.string()
        let user = entry.required("user")?.nonEmptyString()
        let password = PasswordSource(entry: entry, node: node)
        let persistence = entry["persistence"].map { $0.choice(Persistence.self) } ?? .forSession
        guard let user, let password, let persistence else { return nil }
        self.init(realm: realm, user: user, password: password, persistence: persistence)
    }
}

extension HostRule.Credential.PasswordSource {
    /// Reads the `password-env` or `password-file` of a credential entry (exactly one). With
    /// `ownerOnly`, a file readable by group or others is a problem (a secret's file is 0600).
    init?(entry: ConfigMapping, node: ConfigNode, ownerOnly: Bool = false) {
        switch (entry["password-env"], entry["password-file"]) {
        case (let envNode?, nil):
            guard let name = envNode.nonEmptyString("an environment variable name") else { return nil }
            let valid =
                name.utf8.first.map { !($0 >= 48 && $0 <= 57) } == true
                && name.utf8.allSatisfy {
                    ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 95
                }
            guard valid else {
                envNode.report("\"\(name)\" is not an environment variable name")
                return nil
            }
            self = .environment(name)
        case (nil, let fileNode?):
            guard let path = fileNode.readableFile() else { return nil }
            if ownerOnly, fileNode.context.loader.checkFiles, let problem = PathResolution.problemWithSecretFileMode(path) { fileNode.report(problem) }
            self = .file(path)
        case (_?, let fileNode?):
            fileNode.report("give either password-env or password-file, not both")
            return nil
        case (nil, nil):
            node.report("missing key \"password-env\" or \"password-file\"")
            return nil
        }
    }
}

extension HostRule.CacheOverride {
    /// Reads a rule's `cache`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `store` | `allow` \| `deny` | `allow` |
    /// | `force-ttl` | duration | none |
    /// | `stale-if-error` | duration | none |
    /// | `key` | `{ drop-query: [NAME], sort-query: BOOL, ignore-query: BOOL }` | unchanged |
    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: ["store", "force-ttl", "stale-if-error", "key"]) else { return }
        if let value = entry["store"]?.choice(Store.self) { store = value }
        if let ttlNode = entry["force-ttl"], let value = ttlNode.duration() {
            forceTTL = value
            if store == .deny { ttlNode.report("force-ttl has no effect with store: deny") }
        }
        if let windowNode = entry["stale-if-error"], let value = windowNode.duration() {
            staleIfError = value
            if store == .deny { windowNode.report("stale-if-error has no effect with store: deny (nothing is stored to serve)") }
        }
        if let keyNode = entry["key"] { key = CacheKeyNormalization(node: keyNode) }
    }
}

extension CacheKeyNormalization {
    /// Reads a rule's `cache.key`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `drop-query` | list of parameter names (`prefix*` allowed) | none |
    /// | `sort-query` | boolean | `false` |
    /// | `ignore-query` | boolean | `false` |
    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: ["drop-query", "sort-query", "ignore-query"]) else { return }
        if let items = entry["drop-query"]?.scalarOrList("a list of query parameter names") {
            for item in items {
                guard let name = item.nonEmptyString("a query parameter name") else { continue }
                if name.contains(where: { $0 == "&" || $0 == "=" || $0 == "?" || $0 == " " }) {
                    item.report("\"\(name)\" is not a query parameter name (no &, =, ? or spaces)")
                } else if name.dropLast().contains("*") || name == "*" {
                    item.report(
                        "\"\(name)\": * may only end a prefix such as utm_*; use ignore-query to drop everything"
                    )
                } else {
                    dropQuery.append(name)
                }
            }
        }
        if let value = entry["sort-query"]?.bool() { sortQuery = value }
        if let ignoreNode = entry["ignore-query"], let value = ignoreNode.bool() {
            ignoreQuery = value
            if value, !dropQuery.isEmpty || sortQuery {
                ignoreNode.report(
                    "ignore-query: true drops the whole query; drop-query and sort-query would do nothing"
                )
            }
        }
    }
}
