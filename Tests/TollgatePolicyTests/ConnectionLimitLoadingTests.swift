import Testing
import TollgatePolicy

@Suite("access.connection-limit and listen[].max-connections: read from the file")
struct ConnectionLimitLoadingTests {
    @Test("A whole number from 1 to 1,000,000 each; unset, no limit; anything else names its line and key")
    func limits() throws {
        let configuration = try Fixture.load(
            "listen:\n  - address: \"127.0.0.1:3128\"\n    max-connections: 500\naccess:\n  connection-limit: 16\n"
        )
        #expect(configuration.listeners.first?.maxConnections == 500)
        #expect(configuration.access.connectionLimit == 16)
        let unset = try Fixture.load("listen:\n  - address: \"127.0.0.1:3128\"\n")
        #expect(unset.listeners.first?.maxConnections == nil)
        #expect(unset.access.connectionLimit == nil)

        let zero = Fixture.problems("access:\n  connection-limit: 0\n")
        #expect(zero.count == 1 && zero[0].hasPrefix("t.yaml:2: access.connection-limit:"), "\(zero)")
        let text = Fixture.problems("listen:\n  - address: \"127.0.0.1:3128\"\n    max-connections: many\n")
        #expect(text.count == 1 && text[0].hasPrefix("t.yaml:3: listen[0].max-connections:"), "\(text)")
        let huge = Fixture.problems("listen:\n  - address: \"127.0.0.1:3128\"\n    max-connections: 1000001\n")
        #expect(huge.count == 1 && huge[0].hasPrefix("t.yaml:3: listen[0].max-connections:"), "\(huge)")
    }
}
