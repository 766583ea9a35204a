import Foundation
import TollgateHTTP
import TollgateSession

/// Recent exchanges as a HAR 1.2 log (`GET /har`), for a browser's network panel or any HAR
/// viewer.
///
/// Secrets are masked as the access log masks them: the values of `Authorization`,
/// `Proxy-Authorization`, `Cookie` and `Set-Cookie` are `***`, a URL's userinfo is `***`, and no
/// cookies are listed. No bodies: `content` has the size and type only. Tollgate's own findings
/// are custom fields (HAR allows them with a leading underscore): `_cache`, `_stored`,
/// `_notStoredReason`, `_error`, `_rule`, `_session`, `_client`.
///
/// Timings follow HAR: `dns`, `connect` (TCP and TLS together, as HAR counts it), `ssl`,
/// `send`, `wait`, `receive`, -1 for a phase that did not happen; `time` is their sum.
enum HARLog {
    /// The fields whose values are never shown.
    static let maskedFields: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// The HAR document of `exchanges` (oldest first), as JSON.
    static func json(_ exchanges: [RecentExchange], creatorVersion: String = "1") -> Data {
        let log: [String: Any] = [
            "log": [
                "version": "1.2",
                "creator": ["name": "tollgate", "version": creatorVersion],
                "pages": [] as [Any],
                "entries": exchanges.map(entry),
            ] as [String: Any]
        ]
        return (try? JSONSerialization.data(withJSONObject: log, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// The latest `limit` (all when nil) of `exchanges` by when they started, oldest first: HAR
    /// prefers its entries sorted by `startedDateTime`, while the journal keeps them in the order
    /// they ended — a request answered from the cache can end before the one it followed, whose
    /// exchange ends only once its response is committed to storage.
    static func inStartOrder(_ exchanges: [RecentExchange], limit: Int?) -> [RecentExchange] {
        let sorted = exchanges.enumerated()
            .sorted { ($0.element.record.started, $0.offset) < ($1.element.record.started, $1.offset) }
            .map(\.element)
        guard let limit else { return sorted }
        return Array(sorted.suffix(max(0, limit)))
    }

    /// One exchange as a HAR entry.
    static func entry(_ exchange: RecentExchange) -> [String: Any] {
        let record = exchange.record
        let transaction = record.upstreamTransaction ?? record.transaction
        let timings = transaction.map(ExchangeTimings.init)
        let total = max(0, exchange.ended.timeIntervalSince(record.started) * 1000)
        let phases = harTimings(timings, total: total)
        let url = AccessLogEntry.redactingUserinfo(exchange.url)
        var entry: [String: Any] = [
            "startedDateTime": iso8601(record.started),
            "time": phases.sum,
            "request": [
                "method": record.head.method,
                "url": url,
                "httpVersion": record.head.versionText,
                "cookies": [] as [Any],
                "headers": headers(record.head.headerFields),
                "queryString": queryString(of: url),
                "headersSize": record.head.byteCount > 0 ? record.head.byteCount : -1,
                "bodySize": record.head.hasBody ? Int(record.requestBodyBytes) : 0,
            ] as [String: Any],
            "response": response(record),
            "cache": [:] as [String: Any],
            "timings": phases.fields,
            "_cache": record.isTunnel ? "bypass" : record.cacheResult,
            "_stored": record.stored,
            "_notStoredReason": record.notStoredReason ?? NSNull(),
            "_error": record.errorCode ?? NSNull(),
            "_rule": exchange.rule,
            "_session": exchange.session,
            "_client": record.clientAddress,
        ]
        if transaction?.resourceFetchType == .networkLoad {
            if let address = transaction?.remoteAddress {
                entry["serverIPAddress"] = hostPart(of: address)
                entry["connection"] = address
            }
        }
        return entry
    }

    private static func response(_ record: ExchangeRecord) -> [String: Any] {
        let head = record.transaction?.response
        let status = record.status ?? 0
        let fields = head?.headerFields ?? HeaderFields()
        return [
            "status": status,
            "statusText": head.map(\.reason) ?? (status > 0 ? HTTPResponseHead.standardReason(for: status) : ""),
            "httpVersion": head?.version ?? (status > 0 ? "HTTP/1.1" : ""),
            "cookies": [] as [Any],
            "headers": headers(fields),
            "content": [
                "size": Int(record.bodyBytes),
                "mimeType": fields["Content-Type"] ?? (record.errorCode != nil ? "text/plain" : "x-unknown"),
            ] as [String: Any],
            "redirectURL": fields["Location"] ?? "",
            "headersSize": -1,
            "bodySize": status > 0 ? Int(record.bodyBytes) : -1,
        ]
    }

    /// HAR's timings and their sum: `send` and `receive` are 0 and `wait` the whole time when the
    /// task's metrics say nothing (an answer of the proxy's own).
    static func harTimings(_ timings: ExchangeTimings?, total: Double) -> (fields: [String: Any], sum: Double) {
        guard let timings else {
            return (["blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": total, "receive": 0], total)
        }
        let connect = (timings.connect ?? 0) + (timings.tls ?? 0)
        let wait = timings.firstByte ?? 0
        let receive = timings.transfer ?? 0
        let fields: [String: Any] = [
            "blocked": -1,
            "dns": timings.dns ?? -1,
            "connect": timings.connect == nil && timings.tls == nil ? -1 : connect,
            "ssl": timings.tls ?? -1,
            "send": 0,
            "wait": wait,
            "receive": receive,
        ]
        return (fields, (timings.dns ?? 0) + connect + wait + receive)
    }

    /// The fields as HAR's `{name, value}` list, secrets masked.
    static func headers(_ fields: HeaderFields) -> [[String: String]] {
        fields.map { field in
            let masked = maskedFields.contains(field.name.lowercased())
            return ["name": field.name, "value": masked ? "***" : field.value]
        }
    }

    /// The query of `url` as HAR's `{name, value}` list, percent-decoded.
    static func queryString(of url: String) -> [[String: String]] {
        guard let query = url.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        let withoutFragment = query.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return withoutFragment.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                let plain = text.replacingOccurrences(of: "+", with: " ")
                return plain.removingPercentEncoding ?? plain
            }
            return ["name": decoded(parts[0]), "value": parts.count > 1 ? decoded(parts[1]) : ""]
        }
    }

    /// `IP` of `IP:port` (`[v6]:port` too).
    static func hostPart(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        guard let colon = address.lastIndex(of: ":") else { return address }
        return String(address[..<colon])
    }

    /// ISO 8601 with milliseconds, as HAR's `startedDateTime` wants.
    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
