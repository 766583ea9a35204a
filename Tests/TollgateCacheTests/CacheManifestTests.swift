import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("The warm manifest: its file format, merging, and the check against the cache", .timeLimit(.minutes(1)))
struct CacheManifestTests {
    let url = "https://example.com/artifact.tar.gz"

    func entry(_ url: String, sha: String = "00", vary: [String: String?] = [:]) -> CacheManifest.Entry {
        CacheManifest.Entry(
            url: url, key: url, vary: vary, status: 200, size: 3, sha256: sha,
            storedAt: Date(timeIntervalSince1970: 1_700_000_000), configSHA256: "cf"
        )
    }

    @Test("A manifest encodes with sorted keys and sorted entries, and decodes to the same value")
    func roundTrip() throws {
        let manifest = CacheManifest(entries: [
            entry("https://b.example/x", vary: ["accept-encoding": "gzip", "accept-language": nil]), entry("https://a.example/y"),
        ])
        let data = manifest.encoded()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasSuffix("}\n"))
        #expect(text.contains("\"version\" : 1"))
        #expect(text.contains("\"stored_at\" : \"2023-11-14T22:13:20Z\""))
        #expect(text.contains("\"accept-language\" : null"))
        #expect(text.contains("https://a.example/y"))
        #expect(!text.contains("\\/"), "slashes are not escaped")
        // Entries are in key order, whatever order they were given in.
        let a = try #require(text.range(of: "https://a.example/y"))
        let b = try #require(text.range(of: "https://b.example/x"))
        #expect(a.lowerBound < b.lowerBound)
        let decoded = try CacheManifest.decode(data, name: "m.json")
        #expect(decoded == manifest)
        #expect(decoded.encoded() == data, "encoding is stable")
    }

    @Test("Merging replaces an entry for the same variant and keeps the others")
    func merging() {
        let old = CacheManifest(entries: [entry(url, sha: "11"), entry("https://example.com/other", sha: "22")])
        let merged = old.merging([entry(url, sha: "33"), entry(url, sha: "44", vary: ["accept": "text/plain"])])
        #expect(merged.entries.count == 3)
        #expect(merged.entries(forKey: url).map(\.sha256).sorted() == ["33", "44"])
        #expect(merged.entries(forKey: "https://example.com/other").map(\.sha256) == ["22"])
    }

    @Test("A file of another version or shape is refused, saying which and where")
    func badFiles() throws {
        #expect(throws: CacheManifest.LoadError.self) {
            try CacheManifest.decode(Data(#"{"version":2,"generator":"x","entries":[]}"#.utf8), name: "m.json")
        }
        do {
            _ = try CacheManifest.decode(Data(#"{"version":1,"generator":"x","entries":[{"url":"u"}]}"#.utf8), name: "m.json")
            Issue.record("a manifest entry without a key decoded")
        } catch {
            #expect(error.description.hasPrefix("m.json: not a Tollgate manifest: missing"), "\(error)")
            #expect(error.description.contains("entries"), "\(error)")
        }
        do {
            _ = try CacheManifest.load(contentsOf: "/nonexistent/manifest.json")
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.description.contains("cannot read"))
        }
    }

    @Test("A variant is selected by the Vary'd values it was stored for, an absent field by its absence")
    func selection() {
        let gzip = entry(url, vary: ["accept-encoding": "gzip", "x-team": nil])
        #expect(gzip.isSelected(by: ["Accept-Encoding": "gzip"]))
        #expect(!gzip.isSelected(by: ["Accept-Encoding": "br"]))
        #expect(!gzip.isSelected(by: ["Accept-Encoding": "gzip", "X-Team": "web"]))
        #expect(!gzip.isSelected(by: [:]))
        #expect(entry(url).isSelected(by: ["Accept-Encoding": "anything"]))
    }

    @Test("An entry made from the store checks out; changed, missing or tampered bodies are each caught")
    func checkAgainstTheStore() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let small = pattern(100)
            let large = pattern(5_000, seed: 3)
            try put(store, url, body: large)
            try put(
                store, "https://example.com/small", body: small,
                responseLines: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"], requestLines: ["Accept-Encoding: gzip"]
            )
            let largeEntry = try #require(
                try store.manifestEntry(
                    key: CacheKey(url: HTTPURL(string: url)!), requestHeaders: [:], listedURL: url, configSHA256: "cf"
                )
            )
            #expect(largeEntry.size == 5_000)
            #expect(largeEntry.sha256 == SHA256.hex(SHA256.hash(large)))
            let smallEntry = try #require(
                try store.manifestEntry(
                    key: CacheKey(url: HTTPURL(string: "https://example.com/small")!),
                    requestHeaders: ["Accept-Encoding": "gzip"], listedURL: "https://example.com/small", configSHA256: "cf"
                )
            )
            #expect(smallEntry.vary == ["accept-encoding": "gzip"])
            #expect(
                try store.manifestEntry(
                    key: CacheKey(url: HTTPURL(string: "https://example.com/small")!),
                    requestHeaders: ["Accept-Encoding": "br"], listedURL: "https://example.com/small", configSHA256: "cf"
                ) == nil
            )

            let manifest = CacheManifest(entries: [largeEntry, smallEntry])
            #expect(store.check(manifest).isEmpty)

            var wrongSize = smallEntry
            wrongSize.size = 99
            #expect(store.check(wrongSize)?.kind == .sizeDiffers)
            var wrongDigest = smallEntry
            wrongDigest.sha256 = String(repeating: "0", count: 64)
            #expect(store.check(wrongDigest)?.kind == .digestDiffers)
            var otherVariant = smallEntry
            otherVariant.vary = ["accept-encoding": "br"]
            #expect(store.check(otherVariant)?.kind == .missing)
            var wrongStatus = smallEntry
            wrongStatus.status = 404
            #expect(store.check(wrongStatus)?.kind == .statusDiffers)

            // The large body's file changed behind the store's back: same length, one byte flipped.
            let file = directory.path + "/bodies/" + (try #require(bodyFiles(directory).first))
            var bytes = try #require(FileManager.default.contents(atPath: file))
            bytes[2_500] ^= 0xFF
            try bytes.write(to: URL(fileURLWithPath: file))
            let problems = store.check(manifest)
            #expect(problems.map(\.kind) == [.digestDiffers])
            #expect(problems.first?.entry.url == url)
            #expect(problems.first?.description.contains("the body on disk hashes to") == true)

            try FileManager.default.removeItem(atPath: file)
            #expect(store.check(largeEntry)?.kind == .unreadable)
        }
    }
}
