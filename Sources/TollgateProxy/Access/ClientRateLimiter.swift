import NIOConcurrencyHelpers
import NIOCore
public import TollgatePolicy

/// `access.rate-limit` across every listener: one ``TokenBucket`` per client address.
///
/// The table is bounded: when it holds more than ``pruneAbove`` clients, those whose allowance is
/// whole again (as good as never seen) are dropped, and the next pruning waits until the table has
/// doubled — so a flood from many addresses costs a pass over the table now and then, not one per
/// request. Past ``maximumClients`` it starts again empty: every client then has its whole
/// allowance, which a flood from that many addresses has anyway.
public final class ClientRateLimiter: Sendable {
    /// When the table has more clients than this, full buckets are dropped.
    static let pruneAbove = 16_384
    /// The most clients the table holds.
    static let maximumClients = 262_144

    private struct Table {
        var buckets: [String: TokenBucket] = [:]
        var pruneAt = ClientRateLimiter.pruneAbove
    }

    private let table = NIOLockedValueBox(Table())

    /// An empty table (share one among the listeners of a process).
    public init() {}

    /// Counts a request of `client` under `limit` at `now` (monotonic nanoseconds): nil when it
    /// is allowed, else how long until the client may make one.
    func admit(_ client: String, under limit: PolicyConfiguration.Access.RateLimit, now: UInt64 = NIODeadline.now().uptimeNanoseconds) -> Duration? {
        let capacity = Double(limit.burst + 1)
        return table.withLockedValue { table in
            if table.buckets.count > table.pruneAt {
                table.buckets = table.buckets.filter { !$0.value.isFull(now: now, rate: limit.requestsPerSecond, capacity: capacity) }
                if table.buckets.count > Self.maximumClients { table.buckets = [:] }
                table.pruneAt = max(Self.pruneAbove, table.buckets.count * 2)
            }
            var bucket = table.buckets[client] ?? TokenBucket(capacity: capacity, now: now)
            let wait = bucket.take(now: now, rate: limit.requestsPerSecond, capacity: capacity)
            table.buckets[client] = bucket
            return wait
        }
    }

    /// How many clients the table holds.
    var clientCount: Int { table.withLockedValue { $0.buckets.count } }

    /// The size past which the table is pruned next.
    var nextPruning: Int { table.withLockedValue { $0.pruneAt } }
}
