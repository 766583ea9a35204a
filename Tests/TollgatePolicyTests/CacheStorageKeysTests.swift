import Testing
import TollgateHTTP
import TollgatePolicy

@Suite("cache.set-cookie and cache.targeted-fields")
struct CacheStorageKeysTests {
    @Test("set-cookie takes strip or store; targeted-fields takes field names and defaults by listener mode")
    func keys() throws {
        let loader = PolicyLoader(checkFiles: false)
        let stored = try loader.load(yaml: "cache:\n  set-cookie: store\n", file: "t.yaml", baseDirectory: nil)
        #expect(stored.cache.setCookie == .store)
        #expect(PolicyConfiguration().cache.setCookie == .strip)
        let bad = loader.problems(inYAML: "cache:\n  set-cookie: keep\n", file: "t.yaml", baseDirectory: nil)
        #expect(bad.map(\.description).contains { $0.hasPrefix("t.yaml:2: cache.set-cookie:") }, "\(bad)")

        let forward = PolicyConfiguration()
        #expect(forward.cache.effectiveTargetedFields(listeners: forward.listeners).isEmpty)
        let gateway = try loader.load(
            yaml: "listen:\n  - { address: \"127.0.0.1:8443\", mode: reverse, upstream: \"http://127.0.0.1:9000\" }\n",
            file: "t.yaml", baseDirectory: nil
        )
        #expect(gateway.cache.effectiveTargetedFields(listeners: gateway.listeners) == ["Tollgate-Cache-Control", "CDN-Cache-Control"])
        let chosen = try loader.load(yaml: "cache:\n  targeted-fields: [Acme-Cache-Control]\n", file: "t.yaml", baseDirectory: nil)
        #expect(chosen.cache.effectiveTargetedFields(listeners: chosen.listeners) == ["Acme-Cache-Control"])
        let notAName = loader.problems(inYAML: "cache:\n  targeted-fields: [\"CDN Cache Control\"]\n", file: "t.yaml", baseDirectory: nil)
        #expect(notAName.count == 1, "\(notAName)")
    }

    @Test("range-offset-limit takes a size, 0 or none; anything else names the file, line and key")
    func rangeOffsetLimit() throws {
        let loader = PolicyLoader(checkFiles: false)
        #expect(PolicyConfiguration().cache.rangeOffsetLimit == 0)
        #expect(try loader.load(yaml: "cache:\n  range-offset-limit: 8MiB\n", file: "t.yaml", baseDirectory: nil).cache.rangeOffsetLimit == 8 << 20)
        #expect(try loader.load(yaml: "cache:\n  range-offset-limit: none\n", file: "t.yaml", baseDirectory: nil).cache.rangeOffsetLimit == nil)
        #expect(try loader.load(yaml: "cache:\n  range-offset-limit: 0\n", file: "t.yaml", baseDirectory: nil).cache.rangeOffsetLimit == 0)
        let bad = loader.problems(inYAML: "cache:\n  range-offset-limit: all\n", file: "t.yaml", baseDirectory: nil)
        #expect(bad.map(\.description).contains { $0.hasPrefix("t.yaml:2: cache.range-offset-limit:") }, "\(bad)")
    }

    @Test("read-only is a bool and max-variants a whole number from 1 to 1000; anything else names the file, line and key")
    func readOnlyAndMaxVariants() throws {
        let loader = PolicyLoader(checkFiles: false)
        #expect(PolicyConfiguration().cache.readOnly == false)
        #expect(PolicyConfiguration().cache.maxVariants == 16)
        let loaded = try loader.load(yaml: "cache:\n  read-only: true\n  max-variants: 4\n", file: "t.yaml", baseDirectory: nil)
        #expect(loaded.cache.readOnly)
        #expect(loaded.cache.maxVariants == 4)
        let bad = loader.problems(inYAML: "cache:\n  read-only: sometimes\n  max-variants: 0\n", file: "t.yaml", baseDirectory: nil)
        #expect(bad.map(\.description).contains { $0.hasPrefix("t.yaml:2: cache.read-only:") }, "\(bad)")
        #expect(bad.map(\.description).contains { $0.hasPrefix("t.yaml:3: cache.max-variants:") }, "\(bad)")
    }

    @Test("tag-header takes a field name that frames or caches nothing; the decisions remove it from every response clients get")
    func tagHeader() throws {
        let loader = PolicyLoader(checkFiles: false)
        #expect(PolicyConfiguration().cache.tagHeader == nil)
        let loaded = try loader.load(
            yaml: "cache:\n  tag-header: Surrogate-Key\nhosts:\n  - match: api.example\n    response-headers: { remove: Server }\n",
            file: "t.yaml", baseDirectory: nil
        )
        #expect(loaded.cache.tagHeader == "Surrogate-Key")
        let decisions = PolicyDecisions(configuration: loaded)
        #expect(decisions.decide(for: HTTPURL(string: "https://api.example/")!).responseHeaders.remove == ["Server", "Surrogate-Key"])
        #expect(decisions.decide(for: HTTPURL(string: "https://elsewhere.example/")!).responseHeaders.remove == ["Surrogate-Key"])
        #expect(PolicyDecisions(configuration: PolicyConfiguration()).decide(for: HTTPURL(string: "https://a.example/")!).responseHeaders.isEmpty)
        for (value, problem) in [
            ("Cache-Control", "t.yaml:2: cache.tag-header: Cache-Control carries the response's own meaning and cannot hold tags"),
            ("Content-Length", "t.yaml:2: cache.tag-header: Content-Length carries the response's own meaning and cannot hold tags"),
            ("\"Surrogate Key\"", "t.yaml:2: cache.tag-header: \"Surrogate Key\" is not a valid header field name"),
        ] {
            let problems = loader.problems(inYAML: "cache:\n  tag-header: \(value)\n", file: "t.yaml", baseDirectory: nil)
            #expect(problems.map(\.description) == [problem])
        }
    }
}
