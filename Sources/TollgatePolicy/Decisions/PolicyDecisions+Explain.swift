public import Foundation
import TollgateCache
public import TollgateHTTP
import TollgateSession
import TollgateTLS

extension PolicyDecisions {
    /// Header fields whose values are never printed.
    static let secretHeaderWords = ["authorization", "cookie", "token", "secret", "key", "password", "session"]

    /// What the policy decides for `url`, one `item: value` per line, for `tollgate explain`.
    ///
    /// Lines, in order: `url`, `rule`, `session`, `deny`, `cache`, `cache-key`, `trust`,
    /// `client-identity`, `redirects`, `upstream-proxy`, `headers`, `credentials` (one line each),
    /// `intercept`. Passwords never appear (only their source), and header values whose name
    /// suggests a secret (Authorization, Cookie, …token…, …key…) are shown as `(hidden)`.
    public func explain(_ url: HTTPURL, now: Date = Date()) -> String {
        let decision = decide(for: url, now: now)
        var lines: [String] = ["url: \(url)"]

        if let rule = decision.rule {
            var text = "hosts[\(rule.index)] \"\(rule.firstPattern)\""
            if rule.matchedPattern != rule.firstPattern { text += " (by its pattern \"\(rule.matchedPattern)\")" }
            if let line = rule.line { text += ", line \(line)" }
            lines.append("rule: \(text)")
        } else {
            lines.append("rule: none matches; defaults apply")
        }
        let session = decision.session
        lines.append(
            "session: \(decision.sessionName) (configuration \(session.configuration), "
                + "cache-policy \(session.cachePolicy.rawValue), cookies \(session.cookies))"
        )
        lines.append("deny: \(decision.deny ? "yes, requests are refused (host-denied)" : "no")")

        switch decision.cacheStore {
        case .doNotStore: lines.append("cache: store deny (nothing from this host is stored)")
        case .store(let ttl?): lines.append("cache: store allow, force-ttl \(PolicyDecisions.format(ttl))")
        case .store(nil): lines.append("cache: store allow (as the HTTP caching rules allow)")
        }
        if let window = decision.cache.staleIfError {
            lines.append(
                "stale-if-error: \(PolicyDecisions.format(window)) (a stored response up to this stale is served when the origin "
                    + "cannot be reached or answers 500/502/503/504, unless it says must-revalidate or no-cache)"
            )
        }
        let key = decision.cache.key
        if key.isIdentity {
            lines.append("cache-key: the full URL")
        } else {
            var parts: [String] = []
            if key.ignoreQuery { parts.append("ignore-query") }
            if !key.dropQuery.isEmpty { parts.append("drop-query [\(key.dropQuery.joined(separator: ", "))]") }
            if key.sortQuery { parts.append("sort-query") }
            lines.append("cache-key: \(parts.joined(separator: ", ")) -> \(key.normalize(url))")
        }

        let trust = decision.trust
        var trustText = trust.insecure ? "INSECURE, no certificate verification" : "roots \(trust.roots)"
        if !trust.insecure, !trust.crls.isEmpty {
            trustText += ", revocation checked against crls \(trust.crls.joined(separator: ", ")) (every certificate but the root)"
        }
        if trust.pins.isEmpty {
            trustText += ", no pins"
        } else {
            trustText += ", pins [\(trust.pins.map(\.description).joined(separator: ", "))] \(trust.pinMode)"
            if trust.pinsExpired { trustText += " (pins expired: report only)" }
        }
        switch trust.ocsp {
        case .off: break
        case .check: trustText += ", stapled OCSP response checked (revoked: refused)"
        case .require: trustText += ", stapled OCSP response required (none, unverifiable or not good: refused)"
        }
        lines.append("trust: \(trustText)")
        if let identity = decision.clientIdentity {
            lines.append("client-identity: certificate \(identity.certificate), key \(identity.key)")
        } else {
            lines.append("client-identity: none")
        }
        lines.append("redirects: \(decision.redirects)")
        var proxyText = decision.upstreamProxy.map { "\($0.host):\($0.port)" } ?? "none (direct)"
        if !session.upstreamProxyFallbacks.isEmpty {
            proxyText += ", then " + session.upstreamProxyFallbacks.map { "\($0.host):\($0.port)" }.joined(separator: ", then ")
                + " (the first that can be connected to; one that cannot goes last for 10s)"
        }
        // The source of the password, never the password.
        if let credentials = session.upstreamProxyCredentials { proxyText += " (credentials: \(credentials))" }
        lines.append("upstream-proxy: \(proxyText)")
        if !decision.connectTo.isEmpty {
            // Shown only when set: the host's own addresses otherwise, as before the key existed.
            let targets = decision.connectTo.map(\.ruleDescription).joined(separator: ", ")
            let weighted = decision.connectTo.contains { $0.weight != 1 } ? ", as many turns as its weight" : ""
            let backups = decision.connectTo.contains(where: \.isBackup) ? "; a backup only when no other can be connected to" : ""
            lines.append("connect-to: \(targets) (in turn\(weighted)\(backups); one that cannot be connected to goes last for 10s)")
            // The rule matched in this configuration: its index is one of its hosts'.
            if let rule = decision.rule, let interval = configuration.hosts[rule.index].connectToCheck {
                let host = configuration.hosts[rule.index]
                let what = host.connectToCheckProbe.map { "\($0.summary) at each target (one that fails goes last until a check passes)" }
                    ?? "a TCP connection to each target (one that does not accept goes last)"
                // Said only when not 1 and 1, as the line read before the keys existed.
                let counts = (host.connectToCheckFall, host.connectToCheckRise) == (1, 1)
                    ? "" : "; out after \(host.connectToCheckFall) failed in a row, back after \(host.connectToCheckRise) passed in a row"
                let timeout = host.connectToCheckTimeout.map { "; each check within \(PolicyDecisions.format($0))" } ?? ""
                lines.append("connect-to-check: every \(PolicyDecisions.format(interval)), \(what)\(counts)\(timeout)")
            }
        }
        if decision.additionalHeaders.isEmpty {
            lines.append("headers: none added")
        } else {
            let shown = decision.additionalHeaders.map { field in
                let lower = field.name.lowercased()
                let secret = PolicyDecisions.secretHeaderWords.contains { lower.contains($0) }
                return "\(field.name): \(secret ? "(hidden)" : field.value)"
            }
            lines.append("headers: \(shown.joined(separator: "; "))")
        }
        // Shown only when set, with names alone: a value may be a token the origin asks for.
        if !decision.requestHeaders.isEmpty { lines.append("request-headers: \(decision.requestHeaders.summary)") }
        if !decision.responseHeaders.isEmpty { lines.append("response-headers: \(decision.responseHeaders.summary)") }
        for mapping in decision.mapLocal {
            switch mapping.source {
            case .file(let file): lines.append("map-local: \(mapping.path) from the file \(file)")
            case .directory(let directory): lines.append("map-local: \(mapping.path) and under it from the directory \(directory)")
            }
        }
        for mapping in decision.mapRemote {
            lines.append("map-remote: \(mapping.path) and under it to \(mapping.to.absoluteString)")
        }
        if let compress = decision.compress {
            lines.append(
                "compress: \(compress.encodings.map { $0 == "br" ? "br level \(compress.brotliLevel)" : "gzip level \(compress.level)" }.joined(separator: ", ")) "
                    + "from \(compress.minimumSize) bytes for \(compress.types.joined(separator: ", "))"
            )
        }
        if decision.credentials.isEmpty {
            lines.append("credentials: none")
        } else {
            lines += decision.credentials.map { "credentials: \($0)" }
        }
        lines.append("intercept: \(decision.intercept ? "yes" : "no")")
        return lines.joined(separator: "\n")
    }

    /// A duration in the file's own units: `10m`, `90s`, `500ms`.
    static func format(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= size && milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }
}
