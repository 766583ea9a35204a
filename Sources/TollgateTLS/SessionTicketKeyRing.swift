internal import COpenSSL
import NIOConcurrencyHelpers

/// The keys a server context seals its session tickets with and opens them by: the keys of
/// ``TLSConfiguration/sessionTicketKeys`` as given (the operator rotates them, as nginx's key
/// files), or keys the context makes itself and replaces every
/// ``TLSConfiguration/sessionTicketKeyRotation`` (``Rotation``).
///
/// Why its own keys rotate: a ticket is the session's secret sealed under the ticket key, so
/// whoever learns a key can open every ticket it sealed and read those sessions — a key kept for
/// the life of the process (OpenSSL's own, made with the context) makes that every session since
/// the start. With rotation a key seals tickets for one period and opens them for two more (the
/// tickets' lifetime), then is gone, so what one key exposes is bounded (nginx since 1.23.2 and
/// Caddy rotate theirs the same way).
final class SessionTicketKeyRing: Sendable {
    /// Keys made one period after another, each sealing for one period and opening for three.
    struct Rotation {
        /// How long a key seals new tickets.
        let period: Duration
        /// The keys made, newest first, with when each was made.
        private(set) var keys: [(key: SessionTicketKey, made: ContinuousClock.Instant)] = []

        init(period: Duration) {
            self.period = period
        }

        /// How long after it was made a key still opens tickets: its period of sealing and the
        /// tickets' lifetime (two periods) after it.
        var keptFor: Duration { period * 3 }

        /// The key to seal a ticket with at `now`: the newest, or a new one from `make` once the
        /// newest has sealed for a whole period (the keys past ``keptFor`` are dropped then); nil
        /// when a new one is due and `make` has none.
        mutating func sealing(now: ContinuousClock.Instant, make: () -> SessionTicketKey?) -> SessionTicketKey? {
            if let newest = keys.first, now - newest.made < period { return newest.key }
            guard let made = make() else { return nil }
            let kept = keptFor
            keys.insert((made, now), at: 0)
            keys.removeAll { now - $0.made >= kept }
            return made
        }

        /// The key named `name` that still opens tickets at `now`, and whether it is the one
        /// sealing now; nil for a key never made here or dropped.
        func opening(named name: [UInt8], now: ContinuousClock.Instant) -> (key: SessionTicketKey, isSealing: Bool)? {
            guard let index = keys.firstIndex(where: { $0.key.name == name }), now - keys[index].made < keptFor else { return nil }
            return (keys[index].key, index == 0 && now - keys[index].made < period)
        }
    }

    private enum Keys {
        case given([SessionTicketKey])
        case rotating(Rotation)
    }

    private let keys: NIOLockedValueBox<Keys>
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// A ring of the keys `given` (the first seals); nil when there are none.
    init?(given: [SessionTicketKey]) {
        guard !given.isEmpty else { return nil }
        keys = NIOLockedValueBox(.given(given))
        clock = { ContinuousClock.now }
    }

    /// A ring of keys made here, a new one every `period`; `clock` is for tests.
    init(rotatingEvery period: Duration, clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        keys = NIOLockedValueBox(.rotating(Rotation(period: period)))
        self.clock = clock
    }

    /// The key to seal a new ticket with; nil when no key can be made (no randomness).
    func sealingKey() -> SessionTicketKey? {
        let now = clock()
        return keys.withLockedValue { keys -> SessionTicketKey? in
            switch keys {
            case .given(let given):
                return given[0]
            case .rotating(var rotation):
                let key = rotation.sealing(now: now, make: Self.randomKey)
                keys = .rotating(rotation)
                return key
            }
        }
    }

    /// The key a ticket names, and whether it is the sealing one (else the ticket is replaced by
    /// one under the sealing key); nil when the ring has no such key (a full handshake).
    func key(named name: [UInt8]) -> (key: SessionTicketKey, isSealing: Bool)? {
        let now = clock()
        return keys.withLockedValue { keys in
            switch keys {
            case .given(let given):
                return given.firstIndex { $0.name == name }.map { (given[$0], $0 == 0) }
            case .rotating(let rotation):
                return rotation.opening(named: name, now: now)
            }
        }
    }

    /// A key of 80 random bytes (AES-256 and an HMAC-SHA256 secret), from OpenSSL's generator.
    static func randomKey() -> SessionTicketKey? {
        var bytes = [UInt8](repeating: 0, count: 80)
        guard bytes.withUnsafeMutableBufferPointer({ RAND_bytes($0.baseAddress, 80) }) == 1 else { return nil }
        return try? SessionTicketKey(bytes: bytes)
    }
}
