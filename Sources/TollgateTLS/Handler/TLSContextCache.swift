import NIOConcurrencyHelpers
import NIOCore

/// Shares one ``TLSContext`` among equal configurations: one OpenSSL context per distinct trust policy.
///
/// Building a context loads trust roots and identities, so sessions ask the cache instead of building
/// their own. Configurations are equal when every field is (an identity by its certificate chain, PEM
/// files by path). A configuration with a ``TLSConfiguration/serverNameHandler`` cannot be compared and
/// always gets a new, uncached context. The least recently used context is dropped past ``capacity``;
/// handlers using it keep it alive.
///
/// Modelled on async-http-client's `SSLContextCache`, but synchronous: building takes milliseconds.
public final class TLSContextCache: Sendable {
    private struct State: Sendable {
        var contexts: [TLSConfiguration.ContextKey: TLSContext] = [:]
        /// Keys from least to most recently used.
        var order: [TLSConfiguration.ContextKey] = []

        /// The cached context for `key`, marked as most recently used.
        mutating func use(_ key: TLSConfiguration.ContextKey) -> TLSContext? {
            guard let context = self.contexts[key] else { return nil }
            if let index = self.order.firstIndex(of: key) {
                self.order.remove(at: index)
                self.order.append(key)
            }
            return context
        }
    }

    private let state = NIOLockedValueBox(State())

    /// How many contexts are kept.
    public let capacity: Int

    /// A cache keeping up to `capacity` contexts.
    ///
    /// - Parameter capacity: at least 1; 32 unless given.
    public init(capacity: Int = 32) {
        self.capacity = max(1, capacity)
    }

    /// The context for `configuration`, built on first use.
    ///
    /// - Throws: what ``TLSContext/init(configuration:)`` throws; failures are not cached.
    public func context(for configuration: TLSConfiguration) throws -> TLSContext {
        guard let key = configuration.contextKey else { return try TLSContext(configuration: configuration) }
        if let cached = self.state.withLockedValue({ state in state.use(key) }) { return cached }
        // Built outside the lock: two callers may race to build the same context; the first stored wins.
        let built = try TLSContext(configuration: configuration)
        return self.state.withLockedValue { state in
            if let cached = state.use(key) { return cached }
            state.contexts[key] = built
            state.order.append(key)
            while state.order.count > self.capacity {
                state.contexts[state.order.removeFirst()] = nil
            }
            return built
        }
    }

    /// How many contexts the cache holds.
    public var count: Int { self.state.withLockedValue { $0.contexts.count } }
}
