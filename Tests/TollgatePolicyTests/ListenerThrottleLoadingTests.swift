import Testing
import TollgatePolicy

@Suite("listen[].throttle: read from the file")
struct ListenerThrottleLoadingTests {
    private let loader = PolicyLoader(checkFiles: false)

    private func throttle(_ text: String) throws -> PolicyConfiguration.Listener.Throttle? {
        try loader.load(yaml: "listen:\n  - address: \"127.0.0.1:3128\"\n    throttle: \(text)\n", file: "t.yaml", baseDirectory: nil)
            .listeners.first?.throttle
    }

    private func problems(_ text: String) -> [String] {
        loader.problems(inYAML: "listen:\n  - address: \"127.0.0.1:3128\"\n    throttle: \(text)\n", file: "t.yaml", baseDirectory: nil)
            .map(\.description)
    }

    @Test("Rates are sizes or bits a second; latency a duration; each alone is enough")
    func forms() throws {
        #expect(try throttle("{ download: 512KiB/s, upload: 750kbit/s, latency: 150ms }") == .init(download: 524_288, upload: 93_750, latency: .milliseconds(150)))
        #expect(try throttle("{ download: 20Mbit/s }") == .init(download: 2_500_000))
        #expect(try throttle("{ upload: 1Gbit/s }") == .init(upload: 125_000_000))
        #expect(try throttle("{ latency: 2s }") == .init(latency: .seconds(2)))
        #expect(try throttle("{ download: 4096B/s }")?.download == 4_096)
        #expect(PolicyConfiguration.Listener(address: .init(host: "127.0.0.1", port: 1)).throttle == nil)
        #expect(ConfigValueParsers.byteRate("2MiB/s") == 2 << 20)
        #expect(ConfigValueParsers.byteRate("2MiB") == nil)
        #expect(ConfigValueParsers.byteRate("2Mbps") == nil)
        #expect(ConfigValueParsers.byteRate("1.5Mbit/s") == nil)
    }

    @Test("A bad rate, a rate out of range, a long latency or an empty throttle names the file, line and key")
    func problemsAtTheirLines() {
        #expect(problems("{ download: 2Mbps }") == [
            "t.yaml:3: listen[0].throttle.download: '2Mbps' is not a rate: a size a second (512KiB/s, 2MiB/s) or bits a second (750kbit/s, 20Mbit/s)"
        ])
        #expect(problems("{ upload: 100B/s }") == ["t.yaml:3: listen[0].throttle.upload: must be from 1000 to 2147483647 bytes a second, not 100"])
        #expect(problems("{ download: 20Gbit/s }").first?.contains("must be from 1000 to 2147483647 bytes a second, not 2500000000") == true)
        #expect(problems("{ latency: 1m }") == ["t.yaml:3: listen[0].throttle.latency: must be at most 30s"])
        #expect(problems("{ latency: 0ms }") == ["t.yaml:3: listen[0].throttle: throttles nothing: give download, upload or latency"])
        #expect(problems("{ bandwidth: 1MiB/s }").first?.contains("bandwidth") == true)
    }
}
