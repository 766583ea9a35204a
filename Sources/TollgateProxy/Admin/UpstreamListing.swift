import Foundation
import TollgatePolicy
import TollgateSession

/// `GET /upstreams`: the `connect-to` targets the sessions' connections were asked of, whether
/// each is passed over now and how many connections to it failed, as JSON (sorted by target).
enum UpstreamListing {
    private struct Entry: Encodable {
        var target: String
        var down: Bool
        var failures: Int
    }

    /// The listing for the sessions in force; a target several sessions use is down when any of
    /// them passes it over.
    static func json(runtime: PolicyRuntime) -> String {
        var entries: [String: Entry] = [:]
        for status in runtime.sessions.values.flatMap(\.connectionTargetStatuses) {
            let name = status.target.description
            var entry = entries[name] ?? Entry(target: name, down: false, failures: status.failures)
            entry.down = entry.down || status.isPassedOver
            entries[name] = entry
        }
        let sorted = entries.values.sorted { $0.target < $1.target }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(sorted)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
