/// The bytes libFuzzer hands a target, with the ways the targets cut and read them.
public struct FuzzInput {
    /// The input, copied out of libFuzzer's buffer (which must not be kept past the call).
    public let bytes: [UInt8]

    /// Copies `count` bytes at `start`.
    public init(_ start: UnsafePointer<UInt8>?, _ count: Int) {
        bytes = Array(UnsafeBufferPointer(start: count > 0 ? start : nil, count: count))
    }

    /// Wraps bytes already copied (a part of another input).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The input read as UTF-8 (invalid sequences replaced), as a header value or a file would be.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The input cut into pieces of 1 to `largest` bytes, the sizes taken from a simple generator
    /// seeded by the input itself, so a crash replays with the same cuts.
    public func pieces(largest: Int) -> [ArraySlice<UInt8>] {
        var state = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
        for byte in bytes.prefix(16) { state = (state ^ UInt64(byte)) &* 0x100_0000_01B3 }
        var result: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let size = Int((state >> 33) % UInt64(largest)) + 1
            let end = min(bytes.count, start + size)
            result.append(bytes[start..<end])
            start = end
        }
        return result
    }

    /// The points at which to cut the input in two: every point for short inputs, an even
    /// spread of `limit` points for longer ones (every point would make a run quadratic).
    public func splitPoints(limit: Int = 64) -> [Int] {
        guard bytes.count > limit else { return Array(0...bytes.count) }
        return (0...limit).map { $0 * bytes.count / limit }
    }
}
