import Testing
import TollgatePolicy

@Suite("HTTP/2 front settings: listen[].h2c and the http2 limits")
struct HTTP2ConfigurationTests {
    @Test("The defaults: no h2c, 100 streams, a 64KiB header list, 200 resets per 30 s")
    func defaults() throws {
        let configuration = try Fixture.load("listen: [{ address: \"127.0.0.1:3128\" }]")
        #expect(configuration.listeners.first?.h2c == false)
        #expect(configuration.limits.http2MaxConcurrentStreams == 100)
        #expect(configuration.limits.http2MaxHeaderListSize == 64 << 10)
        #expect(configuration.limits.http2MaxResets == 200)
    }

    @Test("Good values are read")
    func read() throws {
        let yaml = """
            listen:
              - { address: "127.0.0.1:8080", mode: reverse, upstream: "http://127.0.0.1:9000", h2c: true }
            limits: { http2-max-concurrent-streams: 16, http2-max-header-list-size: 32KiB, http2-max-resets: 50 }
            """
        let configuration = try Fixture.load(yaml)
        #expect(configuration.listeners.first?.h2c == true)
        #expect(configuration.limits.http2MaxConcurrentStreams == 16)
        #expect(configuration.limits.http2MaxHeaderListSize == 32 << 10)
        #expect(configuration.limits.http2MaxResets == 50)
    }

    @Test("Bad values are reported as FILE:LINE: KEY")
    func bad() {
        let yaml = """
            listen:
              - { address: "127.0.0.1:8080", h2c: sometimes }
            limits:
              http2-max-concurrent-streams: 0
              http2-max-header-list-size: 100
              http2-max-resets: 1000000
            """
        let problems = Fixture.problems(yaml)
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:2: listen[0].h2c:") }, "\(problems)")
        #expect(problems.contains("t.yaml:4: limits.http2-max-concurrent-streams: must be from 1 to 10000, not 0"))
        #expect(problems.contains("t.yaml:5: limits.http2-max-header-list-size: between 1KiB and 16MiB"))
        #expect(problems.contains("t.yaml:6: limits.http2-max-resets: must be from 1 to 100000, not 1000000"))
    }
}
