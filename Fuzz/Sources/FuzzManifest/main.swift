import FuzzSupport
import TollgateCache

// The cache manifest reader (CacheManifest.decode: the JSON file `tollgate warm --manifest` and
// `tollgate cache export` exchange, which may come from another machine) fed arbitrary bytes.
//
// Invariants:
// - arbitrary bytes give a manifest or a LoadError that names the file, never a crash;
// - a manifest read back from what it writes is the same manifest, and what it writes is a fixed
//   point (sorted keys, sorted entries, one final newline).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = Data(FuzzInput(start, count).bytes)
    let manifest: CacheManifest
    do {
        manifest = try CacheManifest.decode(data, name: "fuzz.json")
    } catch {
        fuzzCheck(error.description.hasPrefix("fuzz.json: "), "an error that does not name the file: \(error)")
        return 0
    }
    let written = manifest.encoded()
    fuzzCheck(written.last == 0x0A, "the manifest text does not end with a newline")
    do {
        let again = try CacheManifest.decode(written, name: "again.json")
        fuzzCheck(
            again.version == manifest.version && again.entries.count == manifest.entries.count
                && Set(again.entries) == Set(manifest.entries),
            "a manifest read back differs: \(manifest) → \(again)"
        )
        fuzzCheck(again.encoded() == written, "the written manifest is not a fixed point")
    } catch {
        fuzzCheck(false, "a manifest cannot read what it wrote: \(error)\n\(String(decoding: written, as: UTF8.self))")
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzManifest(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzManifest) }
}
