import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateSession
import TollgateTesting

/// Host names are looked up on threads of their own (``NameLookupThreads``), not on NIO's shared
/// pool, which has one thread per core and runs the cache's commits and file I/O: a slow name
/// service held every commit, and lookups went one per core at a time.
@Suite("Name lookups on their own threads", .serialized, .timeLimit(.minutes(1)))
struct NameLookupThreadsTests {
    @Test("A request to a host name is looked up and answered while every thread of NIO's shared pool is busy")
    func lookupsDoNotWaitForTheSharedPool() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "found \(request.path)") }
        defer { origin.stop() }
        let count = NIOSingletons.blockingPoolThreadCountSuggestion
        let started = NIOLockedValueBox(0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            NIOThreadPool.singleton.submit { _ in
                started.withLockedValue { $0 += 1 }
                release.wait()
            }
        }
        defer { for _ in 0..<count { release.signal() } }
        try await eventually("every shared thread busy") { started.withLockedValue { $0 } == count }

        try await withProxy { proxy in
            // `localhost` is looked up twice: by the destination check and by the session.
            let response = try await request(
                "GET http://localhost:\(origin.port)/named HTTP/1.1\r\nHost: localhost:\(origin.port)\r\n\r\n", port: proxy.port
            )
            #expect(response.status == 200)
            #expect(response.bodyText == "found /named")
        }
    }
}
