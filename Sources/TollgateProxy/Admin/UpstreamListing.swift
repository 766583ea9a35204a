import Foundation
import TollgatePolicy
import TollgateSession

/// `GET /upstreams`: the `connect-to` targets the sessions' connections were asked of, their
/// `weight` and whether each is a `backup` (as the rules list it: the first rule's, when several
/// list one address), whether each is passed over now, how many connections to it (and checks
/// of it) failed and what its last health check found, as JSON (sorted by target).
enum UpstreamListing {
    private struct Entry: Encodable {
        var target: String
        var weight: Int
        var backup: Bool
        var down: Bool
        var failures: Int
        /// What the last health check found (`ok`, or why it failed); absent when unchecked.
        var last_check: String?
    }

    /// The listing for the sessions in force (``PolicyRuntime/connectionTargetStatuses``).
    static func json(runtime: PolicyRuntime) -> String {
        let entries = runtime.connectionTargetStatuses.map {
            Entry(
                target: $0.target.description, weight: $0.target.weight, backup: $0.target.isBackup, down: $0.isPassedOver,
                failures: $0.failures, last_check: $0.lastCheck
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(entries)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
