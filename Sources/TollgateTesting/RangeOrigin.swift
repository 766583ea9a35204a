public import Foundation
import NIOConcurrencyHelpers
public import NIOCore
public import TollgateHTTP

/// A loopback origin serving one resource that supports byte ranges and validators, and that
/// can cut its next response short: the origin of the resume and partial-content tests.
///
/// `GET /file` answers 200 with the whole body, or 206 for one `Range` (416 past the end),
/// honouring `If-Range` (a mismatch gets the whole 200). Every response has a strong ETag
/// (`"v<version>"`), a Last-Modified, `Accept-Ranges: bytes` and `Cache-Control: max-age=3600`.
/// ``cutNext(after:)`` makes the next response close its connection after that many body bytes;
/// ``change(to:)`` swaps in a new body and version.
public final class RangeOrigin: Sendable {
    struct State {
        var body: [UInt8]
        var version: Int
        var cutAfter: Int?
        /// Whether a cut response stalls (the connection stays open) instead of closing.
        var stalls = false
        var ranges: [String?] = []
        var acceptsRanges = true
        /// Every response's body goes out this many bytes at a time, with this pause between.
        var pace: (chunk: Int, pause: TimeAmount)?
    }

    private let state: NIOLockedValueBox<State>
    /// The server.
    public let origin: LoopbackOrigin

    /// Starts serving `body` as version 1.
    public static func start(body: [UInt8]) async throws -> RangeOrigin {
        let state = NIOLockedValueBox(State(body: body, version: 1))
        let server = try await LoopbackOrigin.start { request, respond in Self.answer(request, respond, state) }
        return RangeOrigin(origin: server, state: state)
    }

    private init(origin: LoopbackOrigin, state: NIOLockedValueBox<State>) {
        self.origin = origin
        self.state = state
    }

    /// The resource's URL.
    public var url: HTTPURL { origin.url("/file") }
    /// The current body.
    public var body: [UInt8] { state.withLockedValue { $0.body } }
    /// The current strong ETag.
    public var etag: String { state.withLockedValue { "\"v\($0.version)\"" } }
    /// The Range field of each request, in order (nil: none).
    public var rangesAsked: [String?] { state.withLockedValue { $0.ranges } }
    /// Requests served.
    public var requestCount: Int { origin.requestCount }

    /// The next response closes its connection after `bytes` body bytes (`stall`: sends nothing
    /// more but keeps the connection open).
    public func cutNext(after bytes: Int, stall: Bool = false) {
        state.withLockedValue {
            $0.cutAfter = bytes
            $0.stalls = stall
        }
    }
    /// A new body and version (a new ETag and Last-Modified).
    public func change(to body: [UInt8]) {
        state.withLockedValue {
            $0.body = body
            $0.version += 1
        }
    }
    /// Whether Range is honoured (false: always the whole 200, no Accept-Ranges).
    public func acceptRanges(_ accepts: Bool) { state.withLockedValue { $0.acceptsRanges = accepts } }

    public func stop() { origin.stop() }

    /// Sends every body `chunk` bytes at a time, `pause` apart (a slow origin), until called with nil.
    public func pace(_ chunk: Int?, every pause: TimeAmount = .milliseconds(10)) {
        state.withLockedValue { $0.pace = chunk.map { ($0, pause) } }
    }

    /// Writes `bytes` from `offset` on, a chunk at a time, a pause apart.
    private static func dribble(_ bytes: [UInt8], from offset: Int, _ pace: (chunk: Int, pause: TimeAmount), _ respond: OriginResponder) {
        guard offset < bytes.count else { return }
        let end = min(bytes.count, offset + pace.chunk)
        respond.writeWithFuture(Array(bytes[offset..<end])).whenSuccess {
            respond.after(pace.pause) { dribble(bytes, from: end, pace, respond) }
        }
    }

    private static func answer(_ request: RecordedRequest, _ respond: OriginResponder, _ state: NIOLockedValueBox<State>) {
        let (body, version, cut, stalls, acceptsRanges, pace) = state.withLockedValue { state in
            state.ranges.append(request.headerFields["Range"])
            defer { state.cutAfter = nil }
            return (state.body, state.version, state.cutAfter, state.stalls, state.acceptsRanges, state.pace)
        }
        let etag = "\"v\(version)\""
        let lastModified = HTTPDate.format(Date(timeIntervalSince1970: 1_600_000_000 + Double(version) * 86_400))
        var fields: HeaderFields = [
            "ETag": etag, "Last-Modified": lastModified, "Cache-Control": "max-age=3600", "Content-Type": "application/octet-stream",
        ]
        if acceptsRanges { fields.add(name: "Accept-Ranges", value: "bytes") }
        var status = 200
        var slice = body[...]
        let ifRange = request.headerFields["If-Range"]
        let ifRangeHolds = ifRange == nil || ifRange == etag || ifRange == lastModified
        if acceptsRanges, ifRangeHolds, let value = request.headerFields["Range"], let ranges = ByteRangeRequest(fieldValue: value),
            let single = ranges.single
        {
            guard let range = single.resolve(length: Int64(body.count)) else {
                fields.add(name: "Content-Range", value: "bytes */\(body.count)")
                respond.send(status: 416, headers: fields, bytes: [])
                return
            }
            status = 206
            slice = body[Int(range.lowerBound)..<Int(range.upperBound)]
            fields.add(name: "Content-Range", value: ContentRange(range: range, completeLength: Int64(body.count)).description)
        }
        if let pace {
            fields.add(name: .contentLength, value: String(slice.count))
            respond.sendHead(status: status, headers: fields)
            dribble(Array(slice), from: 0, pace, respond)
            return
        }
        guard let cut, cut < slice.count else {
            respond.send(status: status, headers: fields, bytes: Array(slice))
            return
        }
        fields.add(name: .contentLength, value: String(slice.count))
        respond.sendHead(status: status, headers: fields)
        respond.writeWithFuture(Array(slice.prefix(cut))).whenComplete { _ in if !stalls { respond.close() } }
    }
}
