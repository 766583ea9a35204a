import NIOConcurrencyHelpers
import NIOCore
public import TollgatePolicy

/// `access.rate-limit` across every listener: one ``TokenBucket`` per client address. A client
/// whose bucket has filled up again is forgotten when the table grows past ``pruneAbove``, so the
/// table holds the clients of the last moments, not every address ever seen.
public final class ClientRateLimiter: Sendable {
    /// When the table has more clients than this, full buckets are dropped.
    static let pruneAbove = 16_384

    private let buckets = NIOLockedValueBox([String: TokenBucket]())

    /// An empty table (share one among the listeners of a process).
    public init() {}

    /// Counts a request of `client` under `limit` at `now` (monotonic nanoseconds): nil when it
    /// is allowed, else how long until the client may make one.
    func admit(_ client: String, under limit: PolicyConfiguration.Access.RateLimit, now: UInt64 = NIODeadline.now().uptimeNanoseconds) -> Duration? {
        let capacity = Double(limit.burst + 1)
        return buckets.withLockedValue { buckets in
            if buckets.count > Self.pruneAbove {
                buckets = buckets.filter { !$0.value.isFull(now: now, rate: limit.requestsPerSecond, capacity: capacity) }
            }
            var bucket = buckets[client] ?? TokenBucket(capacity: capacity, now: now)
            let wait = bucket.take(now: now, rate: limit.requestsPerSecond, capacity: capacity)
            buckets[client] = bucket
            return wait
        }
    }

    /// How many clients the table holds.
    var clientCount: Int { buckets.withLockedValue { $0.count } }
}
