import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Redirects", .timeLimit(.minutes(1)))
struct SessionRedirectTests {
    /// /r/N redirects to /r/N-1 … /r/0 answers 200; /loop redirects to itself; /see-other 303s to /done.
    static func redirectingOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            let path = request.path
            if path.hasPrefix("/r/"), let n = Int(path.dropFirst(3)), n > 0 {
                respond.send(status: 302, headers: ["Location": "/r/\(n - 1)"], body: "moved")
            } else if path == "/loop" {
                respond.send(status: 301, headers: ["Location": "/loop"])
            } else if path == "/see-other" {
                respond.send(status: 303, headers: ["Location": "done"])
            } else if path == "/temporary" {
                respond.send(status: 307, headers: ["Location": "/done"])
            } else if path == "/found" {
                respond.send(status: 302, headers: ["Location": "/done"])
            } else {
                respond.send(status: 200, body: "\(request.method) \(path) [\(request.bodyText)]")
            }
        }
    }

    @Test("Without a delegate redirects are followed and currentRequest follows them")
    func followedWithoutDelegate() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        let task = try session.dataTask(with: Request(url: origin.url("/r/3"))) { _, _, _ in }
        task.resume()
        try await eventually("done") { task.state == .completed }
        #expect(task.error == nil)
        #expect(task.response?.status == 200)
        #expect(task.originalRequest?.url.path == "/r/3")
        #expect(task.currentRequest?.url.path == "/r/0")
        #expect(origin.requests.map(\.path) == ["/r/3", "/r/2", "/r/1", "/r/0"])
    }

    @Test("Every redirect is offered to willPerformHTTPRedirection, and metrics count them")
    func delegateAsked() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url("/r/2")))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.events.filter { $0.hasPrefix("redirect") } == ["redirect 302 /r/1", "redirect 302 /r/0"])
        #expect(recorder.metrics?.redirectCount == 2)
        #expect(recorder.metrics?.transactionMetrics.count == 3)
        #expect(recorder.body == "GET /r/0 []")
    }

    @Test("A delegate that refuses a redirect gets the redirect response itself")
    func refused() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onRedirect = { _, _ in .deliverRedirectResponse }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url("/r/1")))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(task.response?.status == 302)
        #expect(recorder.body == "moved")
        #expect(origin.requestCount == 1)
    }

    @Test("A delegate may change the request it follows")
    func changedRequest() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onRedirect = { _, proposed in
            var changed = proposed
            changed.headerFields.add(name: "X-Hop", value: "yes")
            return .follow(changed)
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url("/found")))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(origin.requests.last?.headerFields["X-Hop"] == "yes")
    }

    @Test("More than the maximum number of redirects fails with httpTooManyRedirects")
    func tooMany() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        let task = try session.dataTask(with: Request(url: origin.url("/loop"))) { _, _, _ in }
        task.resume()
        try await eventually("done") { task.state == .completed }
        #expect(task.error?.code == .httpTooManyRedirects)
        #expect(origin.requestCount == 17)
    }

    @Test("303 turns a POST into a GET without body; 307 keeps method and body")
    func methodRules() async throws {
        let origin = try await Self.redirectingOrigin()
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        let (seeOther, _) = try await session.data(
            for: Request(method: .post, url: origin.url("/see-other"), body: .string("payload"))
        )
        #expect(String(buffer: seeOther) == "GET /done []")
        let (temporary, _) = try await session.data(
            for: Request(method: .post, url: origin.url("/temporary"), body: .string("payload"))
        )
        #expect(String(buffer: temporary) == "POST /done [payload]")
        let (found, _) = try await session.data(
            for: Request(method: .post, url: origin.url("/found"), body: .string("payload"))
        )
        #expect(String(buffer: found) == "GET /done []")
    }
}
