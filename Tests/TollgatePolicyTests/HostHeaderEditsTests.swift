import Testing
import TollgateHTTP
@testable import TollgatePolicy

@Suite("hosts[].request-headers and response-headers: header fields changed on the way")
struct HostHeaderEditsTests {
    @Test("set, add and remove reach the decision; explain names the fields, never the values")
    func readsTheEdits() throws {
        let configuration = try Fixture.load(
            """
            hosts:
              - match: "api.example"
                request-headers:
                  set: { X-Api-Key: "s3cret-value", User-Agent: gateway }
                  add: { X-Added: one }
                  remove: [X-Debug, Cookie]
                response-headers:
                  set: { Strict-Transport-Security: "max-age=31536000" }
                  remove: Server
            """
        )
        let decision = PolicyDecisions(configuration: configuration).decide(host: "api.example", port: 443)
        #expect(decision.requestHeaders.set.map(\.name) == ["X-Api-Key", "User-Agent"])
        #expect(decision.requestHeaders.add == [.init(name: "X-Added", value: "one")])
        #expect(decision.requestHeaders.remove == ["X-Debug", "Cookie"])
        #expect(decision.responseHeaders.set == [.init(name: "Strict-Transport-Security", value: "max-age=31536000")])
        #expect(decision.responseHeaders.remove == ["Server"])
        #expect(PolicyDecisions(configuration: configuration).decide(host: "other.example", port: 443).requestHeaders.isEmpty)
        let explained = PolicyDecisions(configuration: configuration).explain(try #require(HTTPURL(string: "https://api.example/")))
        #expect(explained.contains("request-headers: set X-Api-Key, User-Agent; add X-Added; remove X-Debug, Cookie"), "\(explained)")
        #expect(explained.contains("response-headers: set Strict-Transport-Security; remove Server"), "\(explained)")
        #expect(!explained.contains("s3cret-value"))
    }

    @Test("remove, then set (every line of the name replaced), then add; names case-insensitive")
    func applyOrder() {
        var edits = HostRule.HeaderEdits()
        edits.remove = ["x-debug"]
        edits.set = [.init(name: "Accept", value: "application/json")]
        edits.add = [.init(name: "X-Trace", value: "b")]
        var fields: HeaderFields = ["Accept": "text/html", "X-Debug": "1", "X-Trace": "a"]
        fields.add(name: "accept", value: "*/*")
        edits.apply(to: &fields)
        #expect(fields.values(for: "Accept") == ["application/json"])
        #expect(fields.values(for: "X-Debug") == [])
        #expect(fields.values(for: "X-Trace") == ["a", "b"])
    }

    @Test("Framing, hop-by-hop and the proxy's own fields are refused at their line; so are bad names and unknown keys")
    func refusals() {
        let problems = Fixture.problems(
            """
            hosts:
              - match: "a.example"
                request-headers:
                  set: { Host: other.example, Content-Length: "5" }
                  remove: [CDN-Loop, "bad name"]
                response-headers:
                  add: { Transfer-Encoding: chunked }
                  remove: [Cache-Status]
                  replace: { X: y }
            """
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:4: hosts[0].request-headers.set.Host:") && $0.contains("cannot be added") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:4: hosts[0].request-headers.set.Content-Length:") }, "\(problems)")
        #expect(problems.contains { $0.contains("CDN-Loop is written by the proxy") && $0.contains("cannot be removed") }, "\(problems)")
        #expect(problems.contains { $0.contains("\"bad name\" is not a valid header field name") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:7: hosts[0].response-headers.add.Transfer-Encoding:") }, "\(problems)")
        #expect(problems.contains { $0.contains("Cache-Status is written by the proxy") }, "\(problems)")
        #expect(problems.contains { $0.contains("replace") }, "\(problems)")
    }
}
