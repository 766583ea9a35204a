/// One client's allowance under `access.rate-limit` (nginx's `limit_req … burst=N nodelay`): up
/// to `burst + 1` requests at once, refilled at the rate; a request when none is left is refused
/// until one is. A pure value, stepped with the time it is asked at.
struct TokenBucket: Sendable, Equatable {
    /// Requests that may be made now (fractions accumulate between requests).
    private(set) var tokens: Double
    /// When ``tokens`` was last brought up to date (monotonic nanoseconds).
    private(set) var updated: UInt64

    /// A full bucket at `now`.
    init(capacity: Double, now: UInt64) {
        tokens = capacity
        updated = now
    }

    /// Takes one request's token at `now`: nil when it is allowed; otherwise how long until a
    /// token is back (the request is refused and takes nothing).
    mutating func take(now: UInt64, rate: Double, capacity: Double) -> Duration? {
        refill(now: now, rate: rate, capacity: capacity)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        let seconds = (1 - tokens) / rate
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// Whether the bucket is full at `now`: as good as a client never seen (it can be forgotten).
    func isFull(now: UInt64, rate: Double, capacity: Double) -> Bool {
        var copy = self
        copy.refill(now: now, rate: rate, capacity: capacity)
        return copy.tokens >= capacity
    }

    private mutating func refill(now: UInt64, rate: Double, capacity: Double) {
        guard now > updated else { return }  // a clock read on another thread may be a little older
        tokens = min(capacity, tokens + Double(now - updated) / 1e9 * rate)
        updated = now
    }
}
