// The Cache-Control and Vary parsers fed an arbitrary field value (bytes as UTF-8).
//
// Invariants:
// - Cache-Control: the value the formatter writes (`description`) parses back to the same
//   directives; the in-place byte parser over a field line (`init(cacheControlLinesOf:)`) and the
//   string parser (`init(fieldValues:)`) agree; a delta-seconds is never negative nor past
//   2^31 (RFC 9111 §1.2.2);
// - Vary: names are lowercased tokens without duplicates, and the formatted value parses back
//   to the same names (a wildcard to a wildcard).
import FuzzSupport
import TollgateHTTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCacheControl(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let value = FuzzInput(start, count).text

    let parsed = CacheControl(value)
    let reparsed = CacheControl(parsed.description)
    fuzzCheck(reparsed == parsed, "'\(value)' → '\(parsed.description)' → '\(reparsed.description)'")
    var fields = HeaderFields()
    fields.add(name: "Cache-Control", value: value)
    let inPlace = CacheControl(cacheControlLinesOf: fields)
    fuzzCheck(
        inPlace == CacheControl(fieldValues: fields.values(for: "Cache-Control")),
        "the byte and string parsers differ on '\(value)'"
    )
    for seconds in [parsed.maxAge, parsed.sMaxAge, parsed.minFresh, parsed.staleWhileRevalidate, parsed.staleIfError] {
        if let seconds {
            fuzzCheck((0...CacheControl.maximumDeltaSeconds).contains(seconds), "delta-seconds \(seconds) out of range")
        }
    }

    let vary = Vary(fieldValues: [value])
    fuzzCheck(Set(vary.fieldNames).count == vary.fieldNames.count, "duplicate Vary names \(vary.fieldNames)")
    for name in vary.fieldNames {
        fuzzCheck(
            !name.isEmpty && FieldList.isToken(name) && name == name.lowercased(),
            "Vary name '\(name)' is not a lowercased token"
        )
    }
    // A wildcard is written as `*` alone: the names beside it do not matter (it never matches).
    let varyAgain = Vary(fieldValues: [vary.description])
    fuzzCheck(
        varyAgain.isWildcard == vary.isWildcard && (vary.isWildcard || varyAgain.fieldNames == vary.fieldNames),
        "Vary '\(value)' → '\(vary.description)' → '\(varyAgain.description)'"
    )
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzCacheControl(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzCacheControl) }
}
