// The absolute-URL and authority parsers (HTTPURL) and reference resolution fed arbitrary text.
// The input is split at its first newline: a URL, then a reference to resolve against it.
//
// Invariants:
// - the ASCII fast path and the Character path give the same answer for every ASCII string
//   (URL and authority), so no spelling reads two ways depending on which path it takes;
// - a parsed URL is canonical: lowercase scheme and host, a port in 0…65535,
//   a path and query starting with `/`; writing it out and parsing that gives the same URL (an
//   explicit default port aside) and the same text,
//   and its authority parses back to its host and port;
// - a resolved reference is itself a URL that survives writing out and parsing.
import FuzzSupport

@testable import TollgateHTTP

func check(_ url: HTTPURL, from text: String) {
    // Any scheme parses (its users refuse all but http and https); it is lowercase.
    fuzzCheck(!url.scheme.isEmpty && url.scheme == url.scheme.lowercased(), "scheme '\(url.scheme)' from '\(text)'")
    fuzzCheck(url.host == url.host.lowercased() && !url.host.isEmpty, "host '\(url.host)' from '\(text)'")
    if let port = url.port { fuzzCheck((0...65535).contains(port), "port \(port) from '\(text)'") }
    fuzzCheck(url.pathAndQuery.hasPrefix("/"), "path '\(url.pathAndQuery)' from '\(text)'")
    // The same URL, up to an explicit default port (which the written form leaves out).
    let written = url.absoluteString
    let again = try? HTTPURL.parse(written)
    fuzzCheck(
        again?.scheme == url.scheme && again?.host == url.host && again?.effectivePort == url.effectivePort
            && again?.pathAndQuery == url.pathAndQuery && again?.absoluteString == written,
        "'\(text)' → '\(written)' → \(String(describing: again))"
    )
    let authority = try? HTTPURL.parseAuthority(Substring(url.authority))
    fuzzCheck(
        authority?.host == url.host && (authority?.port ?? url.effectivePort) == url.effectivePort,
        "authority '\(url.authority)' of '\(text)' reads back as \(String(describing: authority))"
    )
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzURL(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = FuzzInput(start, count).text
    let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let urlText = String(parts[0])

    let url = try? HTTPURL.parse(urlText)
    if urlText.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
        let slow = try? HTTPURL.parseCharacters(urlText)
        fuzzCheck(
            slow == url,
            "'\(urlText)': bytes → \(String(describing: url)), characters → \(String(describing: slow))"
        )
        let fastAuthority = try? HTTPURL.parseAuthority(Substring(urlText))
        let slowAuthority = try? HTTPURL.parseAuthorityCharacters(Substring(urlText))
        fuzzCheck(
            fastAuthority?.host == slowAuthority?.host && fastAuthority?.port == slowAuthority?.port,
            "authority '\(urlText)': bytes → \(String(describing: fastAuthority)), "
                + "characters → \(String(describing: slowAuthority))"
        )
    }
    if let authority = try? HTTPURL.parseAuthority(Substring(urlText)) {
        fuzzCheck(
            authority.host == authority.host.lowercased() && !authority.host.isEmpty,
            "authority host '\(authority.host)'"
        )
        if let port = authority.port { fuzzCheck((0...65535).contains(port), "authority port \(port)") }
    }
    guard let url else { return 0 }
    check(url, from: urlText)
    if parts.count == 2, let resolved = try? url.resolving(String(parts[1])) {
        check(resolved, from: "\(urlText) + \(parts[1])")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzURL(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzURL) }
}
