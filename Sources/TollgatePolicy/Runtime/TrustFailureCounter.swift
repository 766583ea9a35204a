import NIOConcurrencyHelpers

/// Trust failures counted by host, for `/metrics` ("TLS trust failures by host"): every refused
/// server-trust challenge (denied, untrusted chain, pin mismatch enforced) and every reported pin
/// mismatch (`pin-mode: report`, or pins past `pins-expire`). Connections accepted because of
/// `insecure: true` and client identities that could not be loaded are kept apart
/// (``byHostAndKind``), not counted as trust failures.
///
/// Hosts are normalized (lowercase, no IPv6 brackets, no trailing dot). A forward proxy can be
/// sent anywhere, so at most ``hostLimit`` distinct hosts get their own count; events for hosts
/// beyond it are counted under ``overflowHost``.
///
/// Thread-safe; one counter serves every session of a ``PolicyRuntime`` across reloads.
public final class TrustFailureCounter: Sendable {
    /// A host and what happened there.
    public struct Key: Hashable, Sendable {
        /// The normalized host.
        public var host: String
        /// What happened.
        public var kind: TrustEvent.Kind

        /// Creates a key.
        public init(host: String, kind: TrustEvent.Kind) {
            self.host = host
            self.kind = kind
        }
    }

    /// How many distinct hosts are counted by name unless given.
    public static let defaultHostLimit = 1000
    /// The host label events beyond ``hostLimit`` distinct hosts are counted under.
    public static let overflowHost = "(other)"

    /// How many distinct hosts get their own count.
    public let hostLimit: Int
    private let counts = NIOLockedValueBox<[Key: Int]>([:])

    /// A counter with nothing counted.
    ///
    /// - Parameter hostLimit: how many distinct hosts get their own count.
    public init(hostLimit: Int = TrustFailureCounter.defaultHostLimit) {
        self.hostLimit = max(1, hostLimit)
    }

    /// Counts one event at `host`.
    public func record(host: String, kind: TrustEvent.Kind) {
        let name = HostPattern.normalizedHost(host)
        counts.withLockedValue { counts in
            var label = name
            if !counts.keys.contains(where: { $0.host == name }) {
                let hosts = Set(counts.keys.map(\.host))
                if hosts.subtracting([Self.overflowHost]).count >= hostLimit { label = Self.overflowHost }
            }
            counts[Key(host: label, kind: kind), default: 0] += 1
        }
    }

    /// Trust failures by host (the kinds whose ``TrustEvent/Kind/isTrustFailure`` is true).
    public var byHost: [String: Int] {
        counts.withLockedValue { counts in
            var result: [String: Int] = [:]
            for (key, count) in counts where key.kind.isTrustFailure { result[key.host, default: 0] += count }
            return result
        }
    }

    /// Every event counted, by host and kind (insecure connections and client-identity failures
    /// included).
    public var byHostAndKind: [Key: Int] { counts.withLockedValue { $0 } }

    /// The trust failures counted for `host`.
    public func failures(host: String) -> Int {
        byHost[HostPattern.normalizedHost(host)] ?? 0
    }
}
