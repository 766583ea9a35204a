import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One exchange as the access log records it, in the combined log format with the host rule and
/// the session appended as two more quoted fields:
///
/// `127.0.0.1 - - [10/Oct/2025:13:55:36 +0200] "GET http://example.com/ HTTP/1.1" 200 2326 "-" "curl/8.5.0" "hosts[0]:**" "default"`
///
/// or as one JSON object per line (``jsonLine``) with the fields `time`, `client`, `method`,
/// `target`, `version`, `status`, `bytes`, `referer`, `user_agent`, `rule`, `session`,
/// `duration_ms`, `error`: the `Tollgate-Error` code of an answer the proxy gave itself
/// (`offline-miss` marks what an offline proxy missed), else null; and what the cache and the
/// upstream did: `cache` (hit, miss, revalidated, stale, bypass), `stored`, `not_stored_reason`
/// (``ExchangeRecord/notStoredReason``), `timings` (``ExchangeTimings``, null without a task),
/// `upstream_protocol`, `upstream_address` and `reused` (null unless the response came from
/// the network); `client_tls`: the TLS version of the client's connection (`TLSv1.3`: a TLS
/// listener or an intercepted CONNECT), null for plain HTTP; `client_cert`: the subject of the
/// client's certificate a listener's `client-auth` verified, else null; `websocket` (``WebSocketTotals``: messages and bytes each way, the close code
/// and who closed) for a WebSocket upgrade, written when it ends, else null; `tunnel`
/// (``TunnelTotals``: bytes each way and how it ended) for a CONNECT tunnel or an upgrade to
/// another protocol, else null. The combined
/// format has none of these.
///
/// Only the request line, status, body bytes sent, Referer and User-Agent are logged — never
/// Authorization, Proxy-Authorization or Cookie, and never a password in a URL (userinfo is
/// logged as `***`). The status is `-` when no response was sent (the client went away first);
/// bytes are the response body bytes written to the client.
struct AccessLogEntry: Sendable {
    var clientAddress: String
    /// The TLS version of the client's connection (`TLSv1.3`), nil for plain HTTP (JSON format
    /// only).
    var clientTLS: String? = nil
    /// The subject of the client's certificate, verified by the listener's `client-auth`
    /// (`CN=build-agent-7,O=Example`), nil without one (JSON format only).
    var clientCertificate: String? = nil
    /// Seconds since 1970 when the request head arrived.
    var time: Int
    var method: String
    var target: String
    var version: String
    var status: Int?
    var bodyBytes: Int64
    var referer: String?
    var userAgent: String?
    /// The host rule that matched (`hosts[2]:*.example.com`), or `-`.
    var rule: String = "-"
    /// The session the task ran in, or `-` when none was chosen.
    var session: String = "-"
    /// How long the exchange took, in milliseconds.
    var durationMilliseconds: Int = 0
    /// The `Tollgate-Error` code when the proxy answered itself (JSON format only).
    var errorCode: String?
    /// What the cache did: hit, miss, revalidated, stale or bypass (JSON format only).
    var cache = "bypass"
    /// Whether the response was stored (JSON format only).
    var stored = false
    /// Why it was not stored (JSON format only).
    var notStoredReason: String?
    /// The upstream transaction's phases (JSON format only).
    var timings: ExchangeTimings?
    /// `http/1.1` for a response from the network (JSON format only).
    var upstreamProtocol: String?
    /// The upstream's `IP:port` (JSON format only).
    var upstreamAddress: String?
    /// Whether the upstream connection had carried an earlier request (JSON format only).
    var reused: Bool?
    /// A WebSocket connection's messages and bytes each way and its close (JSON format only).
    var webSocket: WebSocketTotals?
    /// A CONNECT tunnel's or another upgrade's bytes each way and how it ended (JSON format only).
    var tunnel: TunnelTotals? = nil

    var combinedLogLine: String {
        // One pass into one buffer: this runs for every exchange (the log is on by default), and
        // building it from interpolated pieces made a string for each.
        var out: [UInt8] = []
        out.reserveCapacity(192 + target.utf8.count + (userAgent?.utf8.count ?? 0) + (referer?.utf8.count ?? 0))
        out.append(contentsOf: clientAddress.utf8)
        out.append(contentsOf: " - - [".utf8)
        out.append(contentsOf: Self.format(time).utf8)
        out.append(contentsOf: "] \"".utf8)
        Self.appendEscaped(method, to: &out)
        out.append(0x20)
        Self.appendEscaped(Self.redactingUserinfo(target), to: &out)
        out.append(0x20)
        Self.appendEscaped(version, to: &out)
        out.append(contentsOf: "\" ".utf8)
        if let status { Self.appendDecimal(Int64(status), to: &out) } else { out.append(UInt8(ascii: "-")) }
        out.append(0x20)
        if bodyBytes > 0 { Self.appendDecimal(bodyBytes, to: &out) } else { out.append(UInt8(ascii: "-")) }
        func quoted(_ field: String) {
            out.append(contentsOf: " \"".utf8)
            Self.appendEscaped(field, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        quoted(referer ?? "-")
        quoted(userAgent ?? "-")
        quoted(rule)
        quoted(session)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text` for a quoted field: visible ASCII as it is, `"` and `\` after a backslash,
    /// every other byte as `\xHH` (so a client cannot end the field or the line).
    static func appendEscaped(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x20..<0x7F:
                out.append(byte)
            default:
                func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "x"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0xF))
            }
        }
    }

    /// Appends the decimal digits of a non-negative number.
    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        guard value > 0 else {
            out.append(UInt8(ascii: "0"))
            return
        }
        let start = out.count
        var rest = value
        while rest > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        }
        out[start...].reverse()
    }

    var jsonLine: String {
        var fields: [String] = []
        func add(_ name: String, _ value: String?) {
            fields.append("\"\(name)\":" + (value.map { "\"\(Self.jsonEscape($0))\"" } ?? "null"))
        }
        add("time", Self.iso8601(time))
        add("client", clientAddress)
        add("method", method)
        add("target", Self.redactingUserinfo(target))
        add("version", version)
        fields.append("\"status\":" + (status.map(String.init) ?? "null"))
        fields.append("\"bytes\":\(bodyBytes)")
        add("referer", referer)
        add("user_agent", userAgent)
        add("rule", rule)
        add("session", session)
        fields.append("\"duration_ms\":\(durationMilliseconds)")
        add("error", errorCode)
        add("cache", cache)
        fields.append("\"stored\":\(stored)")
        add("not_stored_reason", notStoredReason)
        fields.append("\"timings\":" + (timings?.json ?? "null"))
        add("upstream_protocol", upstreamProtocol)
        add("upstream_address", upstreamAddress)
        fields.append("\"reused\":" + (reused.map { $0 ? "true" : "false" } ?? "null"))
        fields.append("\"websocket\":" + (webSocket?.json ?? "null"))
        fields.append("\"tunnel\":" + (tunnel?.json ?? "null"))
        add("client_tls", clientTLS)
        add("client_cert", clientCertificate)
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `yyyy-mm-ddTHH:MM:SS+zz:zz` in local time.
    static func iso8601(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        var text = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.count >= 5 { text.insert(":", at: text.index(text.endIndex, offsetBy: -2)) }
        return text
    }

    /// A JSON string's content: quotes, backslashes and control characters escaped.
    static func jsonEscape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `dd/Mon/yyyy:HH:MM:SS +zzzz` in local time (strftime in the C locale, as Apache writes it).
    /// The text of the latest second is kept: under load many lines share it.
    static func format(_ seconds: Int) -> String {
        if let cached = lastFormatted.withLockedValue({ $0 }), cached.seconds == seconds { return cached.text }
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%d/%b/%Y:%H:%M:%S %z", &parts)
        let text = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        lastFormatted.withLockedValue { $0 = (seconds, text) }
        return text
    }

    private static let lastFormatted = NIOLockedValueBox<(seconds: Int, text: String)?>(nil)

    /// `target` with the userinfo of an absolute URL (`http://user:password@host/`) replaced by `***`.
    static func redactingUserinfo(_ target: String) -> String {
        // Fast path: scan the bytes for "://" and an "@" in the authority before building anything.
        let bytes = target.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return target }
        var afterScheme = bytes.index(after: colon)
        for expected in [UInt8(ascii: "/"), UInt8(ascii: "/")] {
            guard afterScheme < bytes.endIndex, bytes[afterScheme] == expected else { return slowRedactingUserinfo(target) }
            afterScheme = bytes.index(after: afterScheme)
        }
        var index = afterScheme
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return target
            case UInt8(ascii: "@"): return slowRedactingUserinfo(target)
            default: index = bytes.index(after: index)
            }
        }
        return target
    }

    private static func slowRedactingUserinfo(_ target: String) -> String {
        guard let schemeEnd = target.firstRange(of: "://") else { return target }
        let rest = target[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return target }
        return target[..<schemeEnd.upperBound] + "***" + target[at...]
    }

}
