public import Foundation
import NIOConcurrencyHelpers

/// The requests an offline proxy could not serve (`GET /offline/misses`, `serve --miss-report`):
/// one record per method and URL, with how often and when it was missed, so a pipeline can fail
/// the build and print what to add to its warm list.
///
/// Bounded: past ``capacity`` distinct requests, further new ones are only counted
/// (``overflow``); the ones already listed keep counting.
public final class OfflineMissReport: Sendable {
    /// Why a request was a miss.
    public enum Reason: String, Sendable, Codable, Hashable {
        /// Nothing usable is stored for it.
        case notCached = "not-cached"
        /// Served with a manifest, and the manifest does not list it.
        case notInManifest = "not-in-manifest"
        /// What is stored is not what the manifest locks (status, size or digest).
        case manifestMismatch = "manifest-mismatch"
        /// A CONNECT to a host that is not intercepted: a tunnel needs the network.
        case tunnel
        /// A protocol upgrade (WebSocket): it needs the network.
        case upgrade
        /// A method the cache never answers (POST, PUT, …).
        case method
    }

    /// One missed request.
    public struct Miss: Sendable, Hashable, Codable {
        /// The request method (`CONNECT` for a tunnel).
        public var method: String
        /// The URL (`host:port` for a tunnel).
        public var url: String
        /// How many times it was missed.
        public var count: Int
        /// When it was first missed.
        public var first: Date
        /// When it was last missed.
        public var last: Date
        /// Why, the last time.
        public var reason: Reason
    }

    /// The most distinct requests listed.
    public static let capacity = 10_000

    private struct State {
        var misses: [String: Miss] = [:]
        var overflow = 0
        /// Every miss by reason, listed or not (for `/metrics`).
        var byReason: [Reason: Int] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// An empty report.
    public init() {}

    /// Records a miss of `method url` at `time`.
    public func record(method: String, url: String, reason: Reason, at time: Date = Date()) {
        let key = method + " " + url
        state.withLockedValue { state in
            state.byReason[reason, default: 0] += 1
            if var miss = state.misses[key] {
                miss.count += 1
                miss.last = time
                miss.reason = reason
                state.misses[key] = miss
            } else if state.misses.count < Self.capacity {
                state.misses[key] = Miss(method: method, url: url, count: 1, first: time, last: time, reason: reason)
            } else {
                state.overflow += 1
            }
        }
    }

    /// The misses, by URL then method.
    public var misses: [Miss] {
        state.withLockedValue { Array($0.misses.values) }.sorted { ($0.url, $0.method) < ($1.url, $1.method) }
    }

    /// Every miss since the report began, by reason (``overflow`` included).
    public var countsByReason: [Reason: Int] { state.withLockedValue { $0.byReason } }

    /// Misses of requests past ``capacity`` that are not listed.
    public var overflow: Int { state.withLockedValue { $0.overflow } }

    /// The JSON list: `[{"count":…,"first":"…","last":"…","method":"GET","reason":"not-cached","url":"…"}, …]`,
    /// times in ISO 8601, one object a line.
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let lines = misses.map { miss in (try? encoder.encode(miss)).map { String(decoding: $0, as: UTF8.self) } ?? "{}" }
        let text = lines.isEmpty ? "[]\n" : "[\n" + lines.joined(separator: ",\n") + "\n]\n"
        return Data(text.utf8)
    }

    /// Writes ``json()`` to `path` (atomically).
    public func write(to path: String) throws {
        try json().write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
