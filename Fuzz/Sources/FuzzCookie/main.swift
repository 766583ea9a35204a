import FuzzSupport
import TollgateHTTP
import TollgateSession

// The Set-Cookie parser (RFC 6265 §5.2, storage rules of §5.3) fed an arbitrary field value, as
// received from one of a few origins (the first byte picks which), with a fixed public suffix list.
//
// Invariants:
// - a cookie is only ever stored for the origin that set it: its domain is the host, or a
//   parent of it that is not a public suffix; an IP host only ever gets host-only cookies;
// - a cookie that came from the origin applies to it again (`matches`) when its path covers the
//   URL's path; a secure or `__Secure-`/`__Host-` cookie only comes from https; `__Host-` is
//   host-only with path `/`;
// - name and value carry no control byte (but HTAB) and no `;`; name plus value fit the size limit;
// - the cookie written back as a Set-Cookie value (its attributes spelled out) parses to the
//   same cookie.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

let origins = [
    "https://www.example.com/a/b", "http://shop.example.co.uk/basket/", "https://127.0.0.1/x",
    "http://[::1]:8080/p/q", "https://example.com/",
].map { HTTPURL(string: $0)! }
let suffixes = PublicSuffixList(rules: "com\nuk\nco.uk\n*.ck\n!www.ck\n")
/// A fixed "now" in whole seconds, so a crash replays the same way and Max-Age lands on a second.
let now = Date(timeIntervalSince1970: 1_767_225_600)

/// The cookie as a Set-Cookie value naming each of its attributes.
func setCookieValue(_ cookie: Cookie) -> String? {
    var parts = ["\(cookie.name)=\(cookie.value)"]
    if !cookie.isHostOnly { parts.append("Domain=\(cookie.domain)") }
    parts.append("Path=\(cookie.path)")
    if let expires = cookie.expiresDate {
        // The Expires attribute carries whole seconds of years 1601…9999 only.
        guard
            expires == .distantPast
                || (expires.timeIntervalSince1970.rounded() == expires.timeIntervalSince1970
                    && expires.timeIntervalSince1970 > -11_644_473_600
                    && expires.timeIntervalSince1970 < 253_402_300_800)
        else { return nil }
        parts.append(expires == .distantPast ? "Max-Age=0" : "Expires=\(HTTPDate.format(expires))")
    }
    if cookie.isSecure { parts.append("Secure") }
    if cookie.isHTTPOnly { parts.append("HttpOnly") }
    if let sameSite = cookie.sameSite { parts.append("SameSite=\(sameSite.rawValue)") }
    return parts.joined(separator: "; ")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCookie(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = FuzzInput(start, count)
    let url = origins[Int(input.bytes[0]) % origins.count]
    let field = String(decoding: input.bytes.dropFirst(), as: UTF8.self)
    guard case .success(let cookie) = Cookie.parse(setCookie: field, from: url, now: now, publicSuffixes: suffixes)
    else {
        return 0
    }
    let host = url.host
    if cookie.isHostOnly {
        fuzzCheck(cookie.domain == host, "host-only cookie for '\(cookie.domain)' from \(host): '\(field)'")
    } else {
        fuzzCheck(Cookie.domainMatches(host, cookie.domain), "cookie for '\(cookie.domain)' from \(host): '\(field)'")
        fuzzCheck(
            !suffixes.isPublicSuffix(cookie.domain),
            "cookie for the public suffix '\(cookie.domain)': '\(field)'"
        )
        fuzzCheck(
            !host.contains(":") && !host.allSatisfy({ $0.isNumber || $0 == "." }),
            "domain cookie on an IP host: '\(field)'"
        )
    }
    if cookie.isSecure || cookie.name.hasPrefix("__Secure-") || cookie.name.hasPrefix("__Host-") {
        fuzzCheck(url.isSecure && cookie.isSecure, "a secure cookie from \(url): '\(field)'")
    }
    if cookie.name.hasPrefix("__Host-") {
        fuzzCheck(cookie.isHostOnly && cookie.path == "/", "a __Host- cookie with a domain or path: '\(field)'")
    }
    for text in [cookie.name, cookie.value] {
        // HTAB is allowed inside (RFC 6265bis §5.6: CTLs other than HTAB are refused).
        fuzzCheck(
            !text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F || $0 == ";" },
            "control byte or ';' kept: '\(field)'"
        )
    }
    fuzzCheck(cookie.name.utf8.count + cookie.value.utf8.count <= Cookie.maximumSize, "an oversized cookie kept")
    fuzzCheck(cookie.path.hasPrefix("/"), "path '\(cookie.path)' does not start with /")
    if Cookie.pathMatches(url.path, cookie.path), !cookie.isExpired(at: now) {
        fuzzCheck(cookie.matches(url), "cookie '\(field)' does not apply to \(url), which set it")
    }
    if let again = setCookieValue(cookie) {
        let reparsed = Cookie.parse(setCookie: again, from: url, now: now, publicSuffixes: suffixes)
        fuzzCheck(reparsed == .success(cookie), "'\(field)' → '\(again)' → \(reparsed)")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzCookie(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzCookie) }
}
