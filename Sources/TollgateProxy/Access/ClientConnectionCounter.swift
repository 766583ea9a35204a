import NIOConcurrencyHelpers
import NIOCore

/// `access.connection-limit` across every listener: how many connections each client address
/// has open.
///
/// Only connections counted while a limit was set are in the table (a reload that sets one counts
/// the connections opened from then on), and an address leaves it with its last connection, so
/// it holds no more entries than there are open connections.
public final class ClientConnectionCounter: Sendable {
    private let table = NIOLockedValueBox([String: Int]())

    /// An empty table (share one among the listeners of a process).
    public init() {}

    /// Counts a connection of `client` when it has fewer than `limit` open; returns whether it
    /// was counted (a connection not counted is over the limit).
    func open(_ client: String, limit: Int) -> Bool {
        table.withLockedValue { table in
            let open = table[client, default: 0]
            guard open < limit else { return false }
            table[client] = open + 1
            return true
        }
    }

    /// A counted connection of `client` closed.
    func close(_ client: String) {
        table.withLockedValue { table in
            guard let open = table[client] else { return }
            table[client] = open > 1 ? open - 1 : nil
        }
    }

    /// Counts `channel`, a new connection of `client`, under `limit`, and forgets it when it
    /// closes; false when the client already has `limit` connections open (`channel` is then
    /// not counted).
    func admit(_ channel: any Channel, of client: String, limit: Int) -> Bool {
        guard open(client, limit: limit) else { return false }
        channel.closeFuture.whenComplete { [self] _ in close(client) }
        return true
    }

    /// How many connections `client` has open (as counted).
    func openConnections(of client: String) -> Int {
        table.withLockedValue { $0[client] ?? 0 }
    }

    /// How many client addresses have a counted connection open.
    var clientCount: Int { table.withLockedValue { $0.count } }
}
