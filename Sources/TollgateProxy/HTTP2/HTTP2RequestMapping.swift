import Foundation
import TollgateHTTP

/// Turns the header block that opens an HTTP/2 stream into the ``ClientRequestHead`` an
/// exchange expects (RFC 9113 §8.3): `:method`, `:scheme`, `:authority` and `:path` become the
/// method, the target and `Host`; the regular fields follow as they came, `Cookie` lines joined
/// into one (§8.2.3, the upstream is HTTP/1.1).
///
/// A block that breaks the rules of §8.2 and §8.3 is malformed: the stream is reset with
/// PROTOCOL_ERROR (``Malformed``). A CONNECT (§8.5) becomes a request whose target is its
/// `:authority`, as an HTTP/1.1 CONNECT's; an extended CONNECT (RFC 8441), which the proxy does
/// not offer, is answered by the proxy itself (``Mapped/refuse(_:)``).
///
/// Pure: no channel, no state.
enum HTTP2RequestMapping {
    /// What a header block becomes.
    enum Mapped {
        /// A request for an exchange.
        case request(ClientRequestHead)
        /// An answer of the proxy's own; nothing goes upstream.
        case refuse(OwnResponse)
    }

    /// Why a header block is malformed (answered with RST_STREAM PROTOCOL_ERROR).
    struct Malformed: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong, in one line.
        let description: String
    }

    /// The fields that describe one connection: never in an HTTP/2 message (RFC 9113 §8.2.2).
    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]

    /// Maps a request's header block.
    /// - Parameters:
    ///   - fields: the block's fields in order, pseudo-header fields first.
    ///   - endStream: the HEADERS frame ended the stream (no body follows).
    ///   - absoluteTarget: the target is to be the absolute URL `scheme://authority/path` (a
    ///     forward listener), else the path alone (origin-form: reverse and intercepted).
    static func map(
        _ fields: some Sequence<(name: String, value: String)>,
        endStream: Bool,
        absoluteTarget: Bool
    ) throws(Malformed) -> Mapped {
        var method: String?
        var scheme: String?
        var authority: String?
        var path: String?
        var extendedProtocol: String?
        var regular = HeaderFields()
        var cookies: [String] = []
        var sawRegular = false
        var byteCount = 0
        for (name, value) in fields {
            byteCount += name.utf8.count + value.utf8.count + 32  // RFC 9113 §6.5.2's accounting
            if name.utf8.first == UInt8(ascii: ":") {
                guard !sawRegular else {
                    throw Malformed(description: "pseudo-header field \(name) after a regular field")
                }
                func set(_ slot: inout String?) throws(Malformed) {
                    guard slot == nil else { throw Malformed(description: "\(name) appears twice") }
                    // The request goes upstream as HTTP/1.1: a space, CR, LF or NUL in a
                    // pseudo-header field would end its request line or Host early and smuggle a
                    // second request (RFC 9113 §8.2.1, §8.3.1; each value's own grammar below).
                    guard pseudoValueIsValid(name, value) else {
                        throw Malformed(description: "\(name) has a byte its grammar does not allow")
                    }
                    slot = value
                }
                switch name {
                case ":method": try set(&method)
                case ":scheme": try set(&scheme)
                case ":authority": try set(&authority)
                case ":path": try set(&path)
                case ":protocol": try set(&extendedProtocol)
                default: throw Malformed(description: "unknown pseudo-header field \(name)")
                }
                continue
            }
            sawRegular = true
            guard !name.isEmpty, name.utf8.allSatisfy(isLowercaseToken) else {
                throw Malformed(description: "field name '\(name)' is not a lowercase token")
            }
            guard value.utf8.allSatisfy({ $0 != 0 && $0 != 0x0A && $0 != 0x0D }) else {
                throw Malformed(description: "field \(name) has a NUL, CR or LF in its value")
            }
            if connectionSpecific.contains(name) {
                throw Malformed(description: "connection-specific field \(name) in an HTTP/2 request")
            }
            if name == "te", value.lowercased() != "trailers" {
                throw Malformed(description: "te other than 'trailers' in an HTTP/2 request")
            }
            if name == "cookie" {
                cookies.append(value)
                continue
            }
            regular.add(name: name, value: value)
        }
        guard let method, !method.isEmpty else { throw Malformed(description: "no :method") }
        if method == "CONNECT", let extendedProtocol {
            // RFC 8441: a WebSocket on the stream. It goes upstream as the HTTP/1.1 upgrade it
            // stands for (below); any other protocol is not relayed.
            guard authority != nil else { throw Malformed(description: "CONNECT without :authority") }
            guard extendedProtocol.lowercased() == "websocket" else {
                return .refuse(
                    OwnResponse(
                        .badRequest,
                        status: 501,
                        "extended CONNECT (:protocol \(extendedProtocol)) is not relayed by this proxy; only websocket is"
                    )
                )
            }
        }
        if method == "CONNECT", extendedProtocol == nil {
            // RFC 9113 §8.5: a tunnel on the stream, to `:authority`; no `:scheme`, no `:path`.
            guard let authority, !authority.isEmpty else { throw Malformed(description: "CONNECT without :authority") }
            guard scheme == nil, path == nil else {
                throw Malformed(description: "CONNECT with :scheme or :path (RFC 9113 §8.5)")
            }
            var headerFields = HeaderFields()
            headerFields.add(name: .host, value: authority)
            regular.remove(.host)
            headerFields.append(contentsOf: regular)
            return .request(
                ClientRequestHead(
                    method: method,
                    target: authority,
                    minorVersion: 1,
                    headerFields: headerFields,
                    framing: .none,
                    byteCount: byteCount,
                    isHTTP2: true
                )
            )
        }
        let webSocket = extendedProtocol != nil
        if webSocket, method != "CONNECT" { throw Malformed(description: ":protocol on a \(method) request") }
        guard let scheme, !scheme.isEmpty else { throw Malformed(description: "no :scheme") }
        guard let path, !path.isEmpty else { throw Malformed(description: "no :path (or an empty one)") }
        guard path.hasPrefix("/") || (path == "*" && method == "OPTIONS") else {
            throw Malformed(description: ":path '\(path)' is neither origin-form nor * for OPTIONS")
        }
        if !cookies.isEmpty { regular.add(name: .cookie, value: cookies.joined(separator: "; ")) }
        if webSocket {
            // RFC 8441 §5: the HTTP/1.1 upgrade this extended CONNECT stands for. HTTP/2 has no
            // Sec-WebSocket-Key/Accept; the origin needs a key (the proxy checks no Accept).
            regular.add(name: .connection, value: "Upgrade")
            regular.add(name: .upgrade, value: "websocket")
            if !regular.contains("sec-websocket-key") {
                let key = (0..<16).map { _ in UInt8.random(in: 0...255) }
                regular.add(name: "sec-websocket-key", value: Data(key).base64EncodedString())
            }
        }
        // The authority is the request's Host (RFC 9113 §8.3.1): a Host the client also sent
        // gives way to it.
        var headerFields = HeaderFields()
        headerFields.reserveCapacity(regular.count + 1)
        if let authority, !authority.isEmpty {
            headerFields.add(name: .host, value: authority)
            regular.remove(.host)
        } else if !regular.contains(.host) {
            guard !absoluteTarget else { throw Malformed(description: "no :authority and no host") }
        }
        headerFields.append(contentsOf: regular)
        let framing: ClientRequestHead.Framing
        if let lengthText = headerFields[.contentLength] {
            guard let length = Int64(lengthText), length >= 0, lengthText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
            else {
                throw Malformed(description: "content-length '\(lengthText)' is not a length")
            }
            guard !endStream || length == 0 else {
                throw Malformed(description: "content-length \(length) on a stream without a body")
            }
            framing = .length(length)
        } else if webSocket {
            // The stream's DATA is the WebSocket's, relayed after the 101, not a request body.
            framing = .none
        } else {
            // No length: the body ends with the stream (the exchange sees it as chunked).
            framing = endStream ? .none : .chunked
        }
        let target: String
        if absoluteTarget {
            let host = authority.flatMap { $0.isEmpty ? nil : $0 } ?? headerFields[.host] ?? ""
            target = path == "*" ? "\(scheme)://\(host)" : "\(scheme)://\(host)\(path)"
        } else {
            target = path
        }
        return .request(
            ClientRequestHead(
                method: webSocket ? "GET" : method,
                target: target,
                minorVersion: 1,
                headerFields: headerFields,
                framing: framing,
                byteCount: byteCount,
                isHTTP2: true
            )
        )
    }

    /// Whether a pseudo-header field's value is in its grammar: `:method` a token (RFC 9110
    /// §9.1), `:scheme` a URI scheme (RFC 3986 §3.1), `:authority` a host and port with no
    /// userinfo (RFC 9113 §8.3.1), `:path` and `:protocol` visible ASCII (a request target has no
    /// whitespace or control byte). Empty values are judged by the checks that follow.
    static func pseudoValueIsValid(_ name: String, _ value: String) -> Bool {
        let bytes = value.utf8
        switch name {
        case ":method", ":protocol":
            return bytes.allSatisfy { isToken($0) }
        case ":scheme":
            return bytes.allSatisfy { isToken($0) && $0 != UInt8(ascii: "!") && $0 != UInt8(ascii: "#") }
                && (bytes.first.map { isLetter($0) } ?? true)
        case ":authority":
            return bytes.allSatisfy {
                $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?")
                    && $0 != UInt8(ascii: "#") && $0 != UInt8(ascii: "@") && $0 != UInt8(ascii: "\\")
            }
        default:
            return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    /// A token byte (RFC 9110 §5.6.2), any case.
    private static func isToken(_ byte: UInt8) -> Bool {
        isLowercaseToken(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// A byte of a field name as HTTP/2 allows it: a token character, no uppercase (§8.2.1).
    private static func isLowercaseToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
