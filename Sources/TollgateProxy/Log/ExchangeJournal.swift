import Foundation
import NIOConcurrencyHelpers
import TollgateHTTP

/// The most recent exchanges of a process, for `GET /har` and the live view: a bounded ring of
/// ``RecentExchange`` (`log.har-entries`, default 1000; 0 keeps none).
///
/// Appending keeps what the exchange recorded, as it is (header lists are copy-on-write values,
/// so nothing is copied or formatted on the request path); masking secrets and formatting happen
/// when the log is asked for (``HARLog``). Thread-safe.
final class ExchangeJournal: Sendable {
    private struct Ring {
        var entries: [RecentExchange] = []
        /// Where the next entry goes once the ring is full.
        var next = 0
        var capacity = 0
    }

    private let ring = NIOLockedValueBox(Ring())

    /// An empty journal.
    init() {}

    /// Keeps `exchange`, dropping the oldest one when `capacity` are kept (`capacity` is the
    /// configuration's value now: a reload that lowers it drops the oldest at once).
    func append(_ exchange: consuming RecentExchange, capacity: Int) {
        guard capacity > 0 else {
            ring.withLockedValue { ring in
                if !ring.entries.isEmpty { ring = Ring() }
            }
            return
        }
        // Once the ring is full the new entry is swapped in, not copied (a copy retained each of
        // its strings and lists), and the oldest one leaves the lock in `exchange`, to be freed
        // after it.
        var exchange = exchange
        ring.withLockedValue { ring in
            if ring.capacity != capacity {
                let ordered = Self.ordered(ring)
                ring = Ring(entries: Array(ordered.suffix(capacity - 1)), next: 0, capacity: capacity)
            }
            if ring.entries.count < capacity {
                ring.entries.append(exchange)
            } else {
                swap(&ring.entries[ring.next], &exchange)
                ring.next = (ring.next + 1) % capacity
            }
        }
    }

    /// Whether nothing is kept.
    var isEmpty: Bool { ring.withLockedValue { $0.entries.isEmpty } }

    /// The latest `limit` exchanges (all when nil), oldest first.
    func recent(limit: Int? = nil) -> [RecentExchange] {
        let all = ring.withLockedValue { Self.ordered($0) }
        guard let limit else { return all }
        return Array(all.suffix(max(0, limit)))
    }

    private static func ordered(_ ring: Ring) -> [RecentExchange] {
        guard ring.entries.count == ring.capacity, ring.next > 0 else { return ring.entries }
        return Array(ring.entries[ring.next...] + ring.entries[..<ring.next])
    }
}

/// One finished exchange as ``ExchangeJournal`` keeps it.
struct RecentExchange: Sendable {
    /// What the exchange recorded (its route dropped: the journal must not keep sessions alive).
    var record: ExchangeRecord
    /// The URL loaded (for a reverse listener, on its upstream); nil for a tunnel. Kept as it is
    /// and formatted only when the journal is read: appending runs for every exchange.
    var loaded: HTTPURL?
    /// The absolute URL loaded; for a tunnel its `host:port`.
    var url: String { loaded?.absoluteString ?? record.head.target }
    /// When the exchange ended.
    var ended: Date
    /// The host rule that matched, or `-`.
    var rule: String
    /// The session, or `-`.
    var session: String

    /// `record` as it ended at `ended`, loading `url` (nil for a tunnel).
    init(_ record: ExchangeRecord, url: HTTPURL?, ended: Date) {
        var record = record
        rule = record.route?.ruleLabel ?? "-"
        session = record.route?.sessionName ?? "-"
        record.route = nil
        self.record = record
        self.loaded = url
        self.ended = ended
    }
}
