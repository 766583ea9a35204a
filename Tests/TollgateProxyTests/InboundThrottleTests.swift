import NIOCore
import NIOEmbedded
import Testing

@testable import TollgateProxy

@Suite("A throttled listener's reads: InboundThrottle, event by event")
struct InboundThrottleTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: count) }
    private func at(_ milliseconds: Int64) -> NIODeadline { start + .milliseconds(milliseconds) }

    @Test("Bytes cross a link at the rate, in slices of 20 ms of it, then the latency")
    func rateAndLatency() {
        // 25,000 B/s: slices of 512 bytes (20 ms would be 500; 512 is the least), 20.48 ms each.
        var throttle = InboundThrottle(rate: 25_000, latency: .milliseconds(100))
        #expect(throttle.sliceSize == 512)
        let first = throttle.received(bytes(1_024), at: start)
        #expect(first.deliver.isEmpty)
        #expect(first.wakeUp == start + .nanoseconds(20_480_000) + .milliseconds(100))
        #expect(throttle.heldBytes == 1_024)
        // Too early: nothing.
        #expect(throttle.wokeUp(at: at(100)).deliver.isEmpty)
        let one = throttle.wokeUp(at: at(121))
        #expect(one.deliver.map(\.readableBytes) == [512])
        #expect(one.wakeUp == start + .nanoseconds(40_960_000) + .milliseconds(100))
        // Bytes sent while the link is busy wait for it; sent once it is free, they take their own time.
        let more = throttle.received(bytes(100), at: at(130))
        #expect(more.deliver.isEmpty)
        #expect(more.wakeUp == nil, "the wake-up asked for comes first")
        let second = throttle.wokeUp(at: at(150))
        #expect(second.deliver.map(\.readableBytes) == [512])
        #expect(second.wakeUp == at(234), "130 ms + 4 ms at the rate + 100 ms")
        #expect(throttle.wokeUp(at: at(234)).deliver.map(\.readableBytes) == [100])
        #expect(throttle.heldBytes == 0)
        _ = throttle.received(bytes(600), at: at(300))
        #expect(throttle.wokeUp(at: at(421)).deliver.map(\.readableBytes) == [512], "the link was free: 300 + 20.48 + 100 ms")
    }

    @Test("Latency alone holds each read whole for the latency")
    func latencyAlone() {
        var throttle = InboundThrottle(rate: nil, latency: .milliseconds(200))
        #expect(throttle.received(bytes(70_000), at: start).wakeUp == at(200))
        #expect(throttle.received(bytes(10), at: at(50)).wakeUp == nil)
        #expect(throttle.wokeUp(at: at(200)).deliver.map(\.readableBytes) == [70_000])
        #expect(throttle.wokeUp(at: at(250)).deliver.map(\.readableBytes) == [10])
    }

    @Test("Reading stops while more than the high-water mark is held, and resumes below it")
    func readsWaitBelowHighWater() {
        var throttle = InboundThrottle(rate: 16_000, latency: .zero)
        #expect(throttle.highWater == 16 << 10)
        #expect(throttle.readRequested(at: start).read)
        _ = throttle.received(bytes(20_000), at: start)
        #expect(!throttle.readRequested(at: start).read, "20,000 bytes held")
        // 16,000 B/s in slices of 512 bytes: after 0.5 s, 15 slices (7,680 bytes) have crossed,
        // and the 12,320 still held are under 16 KiB.
        let later = throttle.wokeUp(at: at(500))
        #expect(later.deliver.reduce(0) { $0 + $1.readableBytes } == 7_680)
        #expect(later.read, "the read wanted is given once under the mark")
        #expect(!throttle.wokeUp(at: at(500)).read, "and only once")
    }

    @Test("A half-close follows the bytes before it; a closed connection gets everything at once")
    func ends() {
        var throttle = InboundThrottle(rate: nil, latency: .milliseconds(100))
        _ = throttle.received(bytes(10), at: start)
        let closed = throttle.ended(.inputClosed, at: at(10))
        #expect(closed.ends.isEmpty)
        let due = throttle.wokeUp(at: at(100))
        #expect(due.deliver.count == 1)
        #expect(due.ends == [.inputClosed])

        var gone = InboundThrottle(rate: nil, latency: .milliseconds(100))
        _ = gone.received(bytes(10), at: start)
        _ = gone.received(bytes(20), at: at(5))
        let inactive = gone.ended(.inactive, at: at(10))
        #expect(inactive.deliver.map(\.readableBytes) == [10, 20])
        #expect(inactive.ends == [.inactive])
    }

    @Test("On a channel: reads are delayed by the loop's clock, and a read is held while the throttle is full")
    func handlerOnEmbeddedChannel() throws {
        let channel = EmbeddedChannel(handler: InboundThrottleHandler(rate: 16_000, latency: .milliseconds(50)))
        defer { _ = try? channel.finish() }
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(45))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        #expect(try channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == "GET / HTTP/1.1\r\n\r\n")

        final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
            typealias OutboundIn = NIOAny
            var reads = 0
            func read(context: ChannelHandlerContext) {
                reads += 1
                context.read()
            }
        }
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter, position: .first)
        channel.read()
        #expect(counter.reads == 1)
        try channel.writeInbound(ByteBuffer(repeating: 0, count: 40_000))
        channel.read()
        #expect(counter.reads == 1, "40,000 bytes held: no read")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(counter.reads == 2)
    }
}
