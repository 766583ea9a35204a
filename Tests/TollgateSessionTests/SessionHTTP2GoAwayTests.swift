import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// nginx as an h2 origin that ends each connection with GOAWAY after five streams
/// (`keepalive_requests 5`): every task completes, over several connections, and nginx's access
/// log shows each request processed exactly once.
@Suite(
    "HTTP/2 upstream: nginx ends each connection with GOAWAY after five streams",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: NGINXOrigin.isInstalled, "needs nginx (Debian nginx-light)")
)
struct SessionHTTP2GoAwayTests {
    /// Checks nginx's access log: each of `paths` processed exactly once, over more than one
    /// connection, none over five requests.
    static func processedOnce(_ origin: NGINXOrigin, _ paths: [String]) -> Set<Substring> {
        let lines = origin.accessLog.map { $0.split(separator: " ") }
        for path in paths {
            #expect(lines.filter { $0.count == 6 && $0[3] == path }.count == 1, "\(path)")
        }
        #expect(lines.allSatisfy { $0.count == 6 && $0[4] == "HTTP/2.0" && $0[5] == "200" })
        #expect(lines.allSatisfy { (Int($0[1]) ?? 99) <= 5 })
        return Set(lines.map { $0[0] })
    }

    @Test("Thirty tasks one after another all complete, over six connections, each request processed once")
    func sequential() async throws {
        let pki = try TestPKI()
        let origin = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 5)
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let paths = (0..<30).map { "/seq/\($0)" }
        for path in paths {
            let (task, body) = try await load(session, Request(url: origin.url(path)))
            #expect(task.response?.status == 200)
            #expect(body == "GET \(path)\n")
        }
        try await eventually("all logged") { origin.accessLog.count >= 30 }
        let connections = Self.processedOnce(origin, paths)
        #expect(connections.count == 6)
        #expect(session.connectionsStarted >= 6)
    }

    @Test("Thirty tasks at once (GETs and POSTs) all complete over several connections, each request processed once")
    func concurrent() async throws {
        let pki = try TestPKI()
        let origin = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 5)
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let paths = (0..<30).map { "/at-once/\($0)" }
        var recorders: [EventRecorder] = []
        for (index, path) in paths.enumerated() {
            var request = Request(url: origin.url(path))
            if index % 3 == 0 {
                request.method = .post
                request.body = .bytes(ByteBuffer(string: "post \(index)"))
            }
            let events = EventRecorder()
            let task = try session.dataTask(with: request)
            task.delegate = events
            task.resume()
            recorders.append(events)
        }
        try await eventually("all thirty done", timeout: .seconds(60)) { recorders.allSatisfy(\.completed) }
        for (index, events) in recorders.enumerated() {
            #expect(events.error == nil, "\(paths[index]): \(String(describing: events.error))")
            #expect(events.body == "\(index % 3 == 0 ? "POST" : "GET") \(paths[index])\n")
        }
        try await eventually("all logged") { origin.accessLog.count >= 30 }
        let connections = Self.processedOnce(origin, paths)
        #expect(connections.count >= 6)
        #expect(session.connectionsStarted > 1)
    }
}
