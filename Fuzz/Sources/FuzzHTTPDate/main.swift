import FuzzSupport
import TollgateHTTP

// The HTTP-date parser and formatter (RFC 9110 §5.6.7) fed arbitrary text, and the formatter
// fed arbitrary instants (the input's first eight bytes as seconds).
//
// Invariants:
// - a parsed date is whole seconds; formatting it and parsing that gives the same instant, and
//   the IMF-fixdate written is a fixed point (format(parse(format(d))) == format(d));
// - surrounding whitespace does not change the reading; the String and Substring entry points agree;
// - any instant in years 1…9999 survives format → parse.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A fixed "now" for two-digit RFC 850 years, so a crash replays the same way.
let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPDate(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = FuzzInput(start, count)
    let text = input.text

    if let date = HTTPDate.parse(text, now: now) {
        let seconds = date.timeIntervalSince1970
        fuzzCheck(seconds == seconds.rounded(.down), "'\(text)' parsed to a fraction of a second: \(seconds)")
        let formatted = HTTPDate.format(date)
        let again = HTTPDate.parse(formatted, now: now)
        fuzzCheck(
            again == date,
            "'\(text)' → \(seconds) → '\(formatted)' → \(String(describing: again?.timeIntervalSince1970))"
        )
        fuzzCheck(HTTPDate.format(again ?? date) == formatted, "the IMF-fixdate '\(formatted)' is not a fixed point")
        fuzzCheck(HTTPDate.parse(" \t\(text) ", now: now) == date, "surrounding whitespace changed '\(text)'")
    }
    // Padded with NUL, a control, which never joins a grapheme cluster: the slice is `text` exactly.
    let substring = ("\u{0}" + text + "\u{0}").dropFirst().dropLast()
    fuzzCheck(
        HTTPDate.parse(substring, now: now) == HTTPDate.parse(text, now: now),
        "String and Substring disagree on '\(text)'"
    )

    if input.bytes.count >= 8 {
        let raw = input.bytes.prefix(8).enumerated().reduce(UInt64(0)) {
            $0 | UInt64($1.element) << (8 * UInt64($1.offset))
        }
        // Years 1…9999: -62135596800 ..< 253402300800 seconds since 1970.
        let seconds = Int64(bitPattern: raw) % 253_402_300_800
        if seconds >= -62_135_596_800 {
            let date = Date(timeIntervalSince1970: Double(seconds))
            let formatted = HTTPDate.format(date)
            let parsed = HTTPDate.parse(formatted, now: now)
            fuzzCheck(
                parsed == date,
                "\(seconds) → '\(formatted)' → \(String(describing: parsed?.timeIntervalSince1970))"
            )
        }
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzHTTPDate(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzHTTPDate) }
}
