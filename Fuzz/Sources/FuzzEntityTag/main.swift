// The entity-tag parsers (RFC 9110 §8.8.3: ETag, If-Match, If-None-Match) fed an arbitrary
// field value.
//
// Invariants:
// - a parsed tag formats to a value that parses back to the same tag (weakness and opaque
//   part), and its opaque part holds only etagc bytes;
// - a parsed list formats to a value that parses back to the same list;
// - a tag that parses alone parses as a one-element list, and matches itself weakly (and strongly
//   when it is strong).
import FuzzSupport

@testable import TollgateHTTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntityTag(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let value = FuzzInput(start, count).text

    if let tag = EntityTag(value) {
        let again = EntityTag(tag.description)
        fuzzCheck(again == tag, "'\(value)' → '\(tag)' → \(String(describing: again))")
        fuzzCheck(
            tag.opaqueTag.utf8.allSatisfy(EntityTag.isETagByte),
            "the opaque tag of '\(value)' has a byte etagc refuses"
        )
        fuzzCheck(EntityTagList(fieldValues: [value]) == .tags([tag]), "'\(value)' is a tag but not a one-tag list")
        fuzzCheck(tag.matches(tag, using: .weak), "'\(tag)' does not match itself weakly")
        fuzzCheck(tag.isWeak || tag.matches(tag, using: .strong), "the strong '\(tag)' does not match itself strongly")
    }
    if let list = EntityTagList(fieldValues: [value]) {
        let again = EntityTagList(fieldValues: [list.description])
        fuzzCheck(again == list, "list '\(value)' → '\(list)' → \(String(describing: again))")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzEntityTag(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzEntityTag) }
}
