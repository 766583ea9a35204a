import Foundation
import TollgateHTTP
import TollgateSession
import Yams

extension HostRule {
    static let checkKeys = ["interval", "tls", "request", "expect", "host", "fall", "rise", "headers", "timeout"]
    /// Header fields a check's request sets itself.
    static let checkReservedHeaders: Set<String> = ["host", "connection", "content-length", "transfer-encoding", "te", "upgrade", "trailer"]

    /// Reads `connect-to-check`: a duration (a TCP connection to each target that often), or a
    /// mapping for more than an accepted connection (HAProxy's `check-ssl`, `option httpchk`,
    /// `http-check expect status`):
    ///
    /// | key | type | default |
    /// |---|---|---|
    /// | `interval` | duration, 100ms or more | `2s` (HAProxy's `inter`) |
    /// | `tls` | boolean: a TLS handshake, the certificate trusted by this rule's `trust` | `false` |
    /// | `request` | `METHOD /path` (GET, HEAD or OPTIONS) or `/path` (GET) | none: no request |
    /// | `expect` | a status (`200`) or a range (`200-299`) | `200-399` |
    /// | `host` | the name checked as: TLS server name, `Host` | the rule's `match` when it names one host |
    /// | `fall` | failed checks in a row that take a target out, 1–100 | `1` |
    /// | `rise` | passed checks in a row that bring it back, 1–100 | `1` |
    /// | `headers` | mapping of header fields the request carries (HAProxy's `http-check send hdr`) | none |
    /// | `timeout` | duration, 100ms to 60s: how long one check may take (HAProxy's `timeout check`) | the interval, at most 3s |
    mutating func loadConnectToCheck(_ node: ConfigNode, hasTargets: Bool) {
        var interval: Duration?
        var probe: ConnectionTargetProbe?
        var (fall, rise) = (1, 1)
        var timeout: Duration?
        if case .mapping = node.node {
            guard let entry = node.mapping(keys: Self.checkKeys) else { return }
            interval = entry["interval"].map { $0.duration() } ?? .seconds(2)
            probe = loadProbe(entry, node: node)
            fall = entry["fall"]?.int(in: 1...100) ?? 1
            rise = entry["rise"]?.int(in: 1...100) ?? 1
            if let timeoutNode = entry["timeout"], let value = timeoutNode.duration() {
                if value < .milliseconds(100) || value > .seconds(60) {
                    timeoutNode.report("a check's timeout is from 100ms to 60s")
                } else {
                    timeout = value
                }
            }
        } else {
            interval = node.duration()
        }
        guard let interval else { return }
        if interval < .milliseconds(100) {
            node.report("check at most every 100ms (a connection to each target each time)")
        } else if !hasTargets {
            node.report("connect-to-check checks the connect-to targets: this rule has none")
        } else {
            connectToCheck = interval
            connectToCheckProbe = probe
            (connectToCheckFall, connectToCheckRise) = (fall, rise)
            connectToCheckTimeout = timeout
        }
    }

    /// The probe of a `connect-to-check` mapping; nil when it asks for a TCP connection alone.
    private func loadProbe(_ entry: ConfigMapping, node: ConfigNode) -> ConnectionTargetProbe? {
        let tls = entry["tls"]?.bool() ?? false
        var request: ConnectionTargetProbe.Request?
        if let requestNode = entry["request"], let text = requestNode.nonEmptyString("METHOD /path") {
            request = Self.checkRequest(text, node: requestNode)
        }
        if let headersNode = entry["headers"] {
            if request == nil, entry["request"] == nil {
                headersNode.report("headers go with the check's request: add request: GET /path")
            } else {
                request?.headerFields = headersNode.headerFields(reserved: Self.checkReservedHeaders, by: "the check itself")
            }
        }
        if let expectNode = entry["expect"] {
            if request == nil, entry["request"] == nil {
                expectNode.report("expect is the status of the check's request: add request: GET /path")
            } else if let statuses = Self.expectedStatuses(expectNode) {
                request?.expectedStatuses = statuses
            }
        }
        guard tls || request != nil else {
            if let hostNode = entry["host"] { hostNode.report("host names what a TLS or HTTP check asks for: add tls or request") }
            return nil
        }
        let host: String
        if let hostNode = entry["host"] {
            guard let text = hostNode.nonEmptyString("a host name") else { return nil }
            guard let pattern = try? HostPattern(text), pattern.port == nil, let single = pattern.singleHost else {
                hostNode.report("\"\(text)\": expected a host name or IP address, without a port")
                return nil
            }
            host = single
        } else if let single = patterns.first?.singleHost {
            host = single
        } else {
            node.report("name the host to check as (host: NAME): this rule's match names no single host")
            return nil
        }
        return ConnectionTargetProbe(host: host, tls: tls, request: request)
    }

    /// `GET /healthz`, `HEAD /`, `OPTIONS *`… or `/healthz` (GET).
    private static func checkRequest(_ text: String, node: ConfigNode) -> ConnectionTargetProbe.Request? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        let (method, path): (String, Substring) = parts.count == 1 ? ("GET", parts[0]) : (String(parts[0]), parts.count == 2 ? parts[1] : "")
        guard ["GET", "HEAD", "OPTIONS"].contains(method) else {
            node.report("\"\(text)\": a check's method is GET, HEAD or OPTIONS")
            return nil
        }
        guard path.hasPrefix("/"), path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            node.report("\"\(text)\": expected METHOD /path, the path starting with / (no spaces, ASCII)")
            return nil
        }
        return ConnectionTargetProbe.Request(method: HTTPMethod(method), path: String(path))
    }

    /// `200` or `200-299`, statuses from 100 to 599.
    private static func expectedStatuses(_ node: ConfigNode) -> ClosedRange<Int>? {
        guard let text = node.string("a status or a range such as 200-299") else { return nil }
        let bounds = text.split(separator: "-", maxSplits: 1).map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard (1...2).contains(bounds.count), let low = bounds.first!, let high = bounds.last!,
            (100...599).contains(low), (100...599).contains(high), low <= high
        else {
            node.report("\"\(text)\": expected a status (200) or a range (200-299), from 100 to 599")
            return nil
        }
        return low...high
    }
}
