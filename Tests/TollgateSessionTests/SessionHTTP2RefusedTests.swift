import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// RFC 9113 §8.7 through the session's pool: a stream the server refused (REFUSED_STREAM, or above
/// a GOAWAY's last stream id) was not processed and is sent again, whatever its method; a stream the
/// server may have processed is not. The origin is not ours: a Python `h2` origin misbehaving on
/// purpose.
@Suite("HTTP/2 upstream: refused streams sent again (Python h2 origin)", .serialized, .timeLimit(.minutes(2)), .enabled(if: PythonH2Origin.python != nil, "needs python3 with h2"))
struct SessionHTTP2RefusedTests {
    static func post(_ url: HTTPURL, _ body: String) -> Request {
        var request = Request(url: url)
        request.method = .post
        request.body = .bytes(ByteBuffer(string: body))
        return request
    }

    @Test("A GET and a POST refused with REFUSED_STREAM are sent again and complete; the origin answered each once")
    func refusedStreamResent() async throws {
        let pki = try TestPKI()
        let origin = try await PythonH2Origin.start(pki: pki, mode: "refuse")
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let (get, getBody) = try await load(session, Request(url: origin.url("/rst-get")))
        #expect(get.response?.status == 200)
        #expect(getBody.hasPrefix("GET /rst-get 0 conn"))
        let (post, postBody) = try await load(session, Self.post(origin.url("/rst-post"), "twelve bytes"))
        #expect(post.response?.status == 200)
        #expect(postBody.hasPrefix("POST /rst-post 12 conn"))  // the body went again, whole
        for path in ["/rst-get", "/rst-post"] {
            #expect((await origin.lines("refused", path: path, atLeast: 1)).count == 1)
            #expect((await origin.lines("request", path: path, atLeast: 2)).count == 2)
            #expect((await origin.lines("answered", path: path, atLeast: 1)).count == 1)
        }
        // A connection that refused a stream takes no new one: each resend went on a new connection.
        #expect(origin.connectionCount == 3)
    }

    @Test("A stream refused every time fails the task after the bounded resends, with the refusal as its error")
    func refusedEveryTime() async throws {
        let pki = try TestPKI()
        let origin = try await PythonH2Origin.start(pki: pki, mode: "refuse")
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let error = await #expect(throws: SessionError.self) {
            _ = try await session.data(for: Self.post(origin.url("/rst-always"), "x"))
        }
        #expect(error?.code == .networkConnectionLost)
        #expect(error?.detail.contains("REFUSED_STREAM") == true)
        let limit = TaskMachine<OriginConnection, Scheduled<Void>>.maximumUnprocessedResends
        #expect((await origin.lines("refused", path: "/rst-always", atLeast: 1 + limit)).count == 1 + limit)
        #expect(origin.lines("answered", path: "/rst-always").isEmpty)
    }

    @Test("A refused streamed upload is sent again with a new stream from the delegate; without one the refusal is the error, saying the body could not go again")
    func refusedStreamedUpload() async throws {
        let pki = try TestPKI()
        let origin = try await PythonH2Origin.start(pki: pki, mode: "refuse")
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        // A delegate that gives a stream every time: the resend is the delegate's second stream.
        let again = EventRecorder()
        again.bodyStream = { BodyStream(pieces: [ByteBuffer(string: "streamed "), ByteBuffer(string: "body")]) }
        let task = try Session(configuration: configuration, delegate: again).uploadTask(
            withStreamedRequest: Request(method: .post, url: origin.url("/rst-stream-again"))
        )
        task.resume()
        try await eventually("resent upload done", timeout: .seconds(30)) { again.completed }
        #expect(again.error == nil)
        #expect(again.body.hasPrefix("POST /rst-stream-again 13 conn"))
        #expect(again.events.filter { $0 == "need-body" }.count == 2)
        // A delegate whose stream went once (a proxy relaying its client's upload): a clear error.
        let once = EventRecorder()
        let given = NIOLockedValueBox(false)
        once.bodyStream = {
            given.withLockedValue { done in
                defer { done = true }
                return done ? nil : BodyStream(pieces: [ByteBuffer(string: "once")])
            }
        }
        let onceTask = try Session(configuration: configuration, delegate: once).uploadTask(
            withStreamedRequest: Request(method: .post, url: origin.url("/rst-stream-once"))
        )
        onceTask.resume()
        try await eventually("refused upload done", timeout: .seconds(30)) { once.completed }
        #expect(once.error?.code == .networkConnectionLost)
        #expect(once.error?.detail.contains("REFUSED_STREAM") == true)
        #expect(once.error?.detail.contains("streamed body cannot be") == true)
        #expect(origin.lines("answered", path: "/rst-stream-once").isEmpty)
    }

    @Test("GOAWAY with streams in flight: those above its last stream id (a POST among them) are sent again on a new connection; a POST below it, which the server may have processed, is not")
    func goAwayInFlight() async throws {
        let pki = try TestPKI()
        let origin = try await PythonH2Origin.start(pki: pki, mode: "goaway")
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let requests = [
            Request(url: origin.url("/ok")),
            Self.post(origin.url("/processed"), "maybe done"),
            Self.post(origin.url("/refused-post"), "sent twice, processed once"),
            Request(url: origin.url("/refused-get")),
        ]
        var recorders: [EventRecorder] = []
        // One at a time, each seen by the origin before the next: streams 1, 3, 5, 7 in this order.
        for request in requests {
            let events = EventRecorder()
            let task = try session.dataTask(with: request)
            task.delegate = events
            task.resume()
            recorders.append(events)
            let path = request.url.path
            try await eventually("the origin saw \(path)", timeout: .seconds(10)) { !origin.lines("request", path: path).isEmpty }
        }
        try await eventually("all four done", timeout: .seconds(30)) { recorders.allSatisfy(\.completed) }
        #expect(origin.process.standardOutput.contains("goaway 1 3"))
        #expect(recorders[0].error == nil)
        #expect(recorders[0].body.hasPrefix("GET /ok 0 conn 1"))
        // Below the last stream id, then the connection closed: maybe processed, a POST: not resent.
        #expect(recorders[1].error?.code == .networkConnectionLost)
        #expect((await origin.lines("request", path: "/processed", atLeast: 1)).count == 1)
        // Above it: not processed, sent again on the second connection.
        #expect(recorders[2].error == nil)
        #expect(recorders[2].body.hasPrefix("POST /refused-post 26 conn 2"))
        #expect(recorders[3].error == nil)
        #expect(recorders[3].body.hasPrefix("GET /refused-get 0 conn 2"))
        for path in ["/ok", "/refused-post", "/refused-get"] {
            #expect((await origin.lines("answered", path: path, atLeast: 1)).count == 1)
        }
        #expect(origin.connectionCount == 2)
    }
}
