import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// A delegate that takes stored bodies as file regions (or declines them) and reads each region's
/// bytes from its file, as a channel's sendfile would.
final class RegionTaker: StoredFileReceiving, @unchecked Sendable {
    let accept: Bool
    let failWrite: Bool
    let state = NIOLockedValueBox<(regions: Int, bytes: [UInt8], pieces: Int, done: Bool, error: SessionError?)>(
        (0, [], 0, false, nil)
    )

    init(accept: Bool, failWrite: Bool = false) {
        self.accept = accept
        self.failWrite = failWrite
    }

    func dataTask(_ task: DataTask, acceptsFileRegionOf length: Int64) -> Bool { accept }

    func dataTask(_ task: DataTask, didReceive region: FileRegion, done: @escaping @Sendable ((any Error)?) -> Void) {
        var bytes = [UInt8](repeating: 0, count: region.readableBytes)
        let count = try? region.fileHandle.withUnsafeFileDescriptor { descriptor in
            bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(region.readerIndex)) }
        }
        state.withLockedValue {
            $0.regions += 1
            $0.bytes += bytes.prefix(max(0, count ?? 0))
        }
        // Written "later", from another thread, as a channel's write promise would complete.
        let fail = failWrite
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
            done(fail ? ChannelError.ioOnClosedChannel : nil)
        }
    }

    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        state.withLockedValue {
            $0.pieces += 1
            $0.bytes += Array(data.readableBytesView)
        }
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        state.withLockedValue {
            $0.done = true
            $0.error = error
        }
    }
}

@Suite("Stored bodies as file regions (StoredFileReceiving)", .timeLimit(.minutes(1)))
struct StoredFileRegionTests {
    static let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }

    func served(by taker: RegionTaker) async throws -> (DataTask, RegionTaker) {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: Self.payload)
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await session.data(for: Request(url: origin.url("/big")))
        let task = try session.dataTask(with: Request(url: origin.url("/big")))
        task.delegate = taker
        task.resume()
        try await eventually("done") { taker.state.withLockedValue { $0.done } }
        #expect(origin.requestCount == 1)
        return (task, taker)
    }

    @Test("A delegate that accepts gets the whole stored body as one region; the task ends after it is written")
    func accepted() async throws {
        let (task, taker) = try await served(by: RegionTaker(accept: true))
        let state = taker.state.withLockedValue { $0 }
        #expect(state.error == nil)
        #expect(state.regions == 1)
        #expect(state.pieces == 0)
        #expect(state.bytes == Self.payload)
        #expect(task.cacheOutcome?.result == .hit)
        #expect(task.countOfBytesReceived == Int64(Self.payload.count))
    }

    @Test("A delegate that declines gets the body in pieces as before")
    func declined() async throws {
        let (_, taker) = try await served(by: RegionTaker(accept: false))
        let state = taker.state.withLockedValue { $0 }
        #expect(state.error == nil)
        #expect(state.regions == 0)
        #expect(state.pieces >= 1)
        #expect(state.bytes == Self.payload)
    }

    @Test("A region that could not be written fails the task")
    func writeFailed() async throws {
        let (_, taker) = try await served(by: RegionTaker(accept: true, failWrite: true))
        #expect(taker.state.withLockedValue { $0.error?.code } == .resourceUnavailable)
    }
}
