#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One exchange as the access log records it, in the combined log format:
///
/// `127.0.0.1 - - [10/Oct/2025:13:55:36 +0200] "GET http://example.com/ HTTP/1.1" 200 2326 "-" "curl/8.5.0"`
///
/// Only the request line, status, body bytes sent, Referer and User-Agent are logged — never
/// Authorization, Proxy-Authorization or Cookie, and never a password in a URL (userinfo is
/// logged as `***`). The status is `-` when no response was sent (the client went away first);
/// bytes are the response body bytes written to the client.
struct AccessLogEntry: Sendable {
    var clientAddress: String
    /// Seconds since 1970 when the request head arrived.
    var time: Int
    var method: String
    var target: String
    var version: String
    var status: Int?
    var bodyBytes: Int64
    var referer: String?
    var userAgent: String?

    var combinedLogLine: String {
        let request = "\(method) \(Self.redactingUserinfo(target)) \(version)"
        let statusText = status.map(String.init) ?? "-"
        let bytesText = bodyBytes > 0 ? String(bodyBytes) : "-"
        return "\(clientAddress) - - [\(Self.format(time))] \"\(Self.escape(request))\" \(statusText) \(bytesText)"
            + " \"\(Self.escape(referer ?? "-"))\" \"\(Self.escape(userAgent ?? "-"))\""
    }

    /// `dd/Mon/yyyy:HH:MM:SS +zzzz` in local time (strftime in the C locale, as Apache writes it).
    static func format(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%d/%b/%Y:%H:%M:%S %z", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `target` with the userinfo of an absolute URL (`http://user:password@host/`) replaced by `***`.
    static func redactingUserinfo(_ target: String) -> String {
        guard let schemeEnd = target.firstRange(of: "://") else { return target }
        let rest = target[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return target }
        return target[..<schemeEnd.upperBound] + "***" + target[at...]
    }

    /// Quotes, backslashes and control or non-ASCII bytes escaped as `\xNN`, so a client cannot
    /// forge log lines.
    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\""
            case UInt8(ascii: "\\"): out += "\\\\"
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(byte))
            default: out += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return out
    }
}
