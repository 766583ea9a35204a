import NIOConcurrencyHelpers
import NIOCore

/// The client connections a server has open, so that shutdown can ask each to finish and,
/// past the grace period, close them.
final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var isClosing = false
        var quiesced: Set<ObjectIdentifier> = []
    }

    private let state = NIOLockedValueBox(State())
    /// Counts the open connections for `/metrics` (`tollgate_client_connections`).
    private let metrics: ProxyMetrics?

    /// Connections counted into `metrics` too.
    init(metrics: ProxyMetrics? = nil) {
        self.metrics = metrics
    }

    /// Registers a new connection; false once shutdown began (the caller refuses the connection).
    func add(_ channel: any Channel) -> Bool {
        let added = state.withLockedValue { state -> Bool in
            guard !state.isClosing else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
        if added {
            metrics?.connectionOpened()
            channel.closeFuture.whenComplete { [self] _ in
                state.withLockedValue { _ = $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
                metrics?.connectionClosed()
            }
        }
        return added
    }

    /// Refuses later connections and returns the open ones; nil when closing had already begun.
    func beginClosing() -> [any Channel]? {
        state.withLockedValue { state in
            guard !state.isClosing else { return nil }
            state.isClosing = true
            return Array(state.channels.values)
        }
    }

    /// Those of `channels` not yet asked to quiesce, now marked as asked.
    func takeUnquiesced(_ channels: [any Channel]) -> [any Channel] {
        state.withLockedValue { state in
            channels.filter { state.quiesced.insert(ObjectIdentifier($0)).inserted }
        }
    }

    /// The connections still open.
    var open: [any Channel] { state.withLockedValue { Array($0.channels.values) } }
}
