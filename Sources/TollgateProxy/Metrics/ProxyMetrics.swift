import Foundation
import NIOConcurrencyHelpers
public import TollgateSession

/// The counters `GET /metrics` reports (Prometheus text format): requests by cache result,
/// upstream errors by kind, and task durations. Shared by every listener of a process.
public final class ProxyMetrics: Sendable {
    private struct State {
        /// Requests by cache result, in the order of ``cacheResults``.
        var requestsByCache = [Int](repeating: 0, count: ProxyMetrics.cacheResults.count)
        var upstreamErrors: [String: Int] = [:]
        var durationCount = 0
        var durationSum = 0.0
        var durationBuckets = [Int](repeating: 0, count: ProxyMetrics.bucketBounds.count)
    }

    /// Upper bounds (seconds) of the task-duration histogram buckets.
    static let bucketBounds: [Double] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30]

    private let state = NIOLockedValueBox(State())

    /// Creates empty counters.
    public init() {}

    /// Counts one finished exchange.
    /// - Parameters:
    ///   - outcome: what the cache did (nil without a cache: counted as `bypass`).
    ///   - errorCode: the `Tollgate-Error` code when the proxy answered with its own error.
    ///   - seconds: how long the exchange took.
    public func record(outcome: CacheOutcome?, errorCode: String?, seconds: Double) {
        let result = Self.cacheResultIndex(outcome)
        state.withLockedValue { state in
            state.requestsByCache[result] += 1
            if let errorCode { state.upstreamErrors[errorCode, default: 0] += 1 }
            state.durationCount += 1
            state.durationSum += seconds
            for (index, bound) in Self.bucketBounds.enumerated() where seconds <= bound {
                state.durationBuckets[index] += 1
            }
        }
    }

    /// The cache results /metrics counts, in the order it reports them.
    static let cacheResults = ["hit", "miss", "revalidated", "stale", "bypass"]

    /// hit, miss, revalidated, stale (served stale) or bypass, as CONTRACT's /metrics names them.
    static func cacheResult(_ outcome: CacheOutcome?) -> String {
        cacheResults[cacheResultIndex(outcome)]
    }

    /// ``cacheResult(_:)`` as an index into ``cacheResults`` (counted without hashing a string).
    static func cacheResultIndex(_ outcome: CacheOutcome?) -> Int {
        guard let outcome else { return 4 }
        if outcome.servedStale { return 3 }
        switch outcome.result {
        case .hit: return 0
        case .stale: return outcome.forwardStatus == 304 ? 2 : 1
        case .uriMiss, .varyMiss, .request: return 1
        case .method, .bypass: return 4
        }
    }

    /// The Prometheus text, with TLS trust failures by host from the policy.
    public func prometheusText(trustFailures: [String: Int]) -> String {
        let state = self.state.withLockedValue { $0 }
        var lines: [String] = []
        lines.append("# HELP tollgate_requests_total Requests by what the cache did.")
        lines.append("# TYPE tollgate_requests_total counter")
        for (index, result) in Self.cacheResults.enumerated() {
            lines.append("tollgate_requests_total{cache=\"\(result)\"} \(state.requestsByCache[index])")
        }
        lines.append(
            "# HELP tollgate_upstream_errors_total Requests the proxy answered itself, by Tollgate-Error code."
        )
        lines.append("# TYPE tollgate_upstream_errors_total counter")
        for (code, count) in state.upstreamErrors.sorted(by: { $0.key < $1.key }) {
            lines.append("tollgate_upstream_errors_total{kind=\"\(Self.escape(code))\"} \(count)")
        }
        lines.append("# HELP tollgate_tls_trust_failures_total Refused or reported server trust, by host.")
        lines.append("# TYPE tollgate_tls_trust_failures_total counter")
        for (host, count) in trustFailures.sorted(by: { $0.key < $1.key }) {
            lines.append("tollgate_tls_trust_failures_total{host=\"\(Self.escape(host))\"} \(count)")
        }
        lines.append("# HELP tollgate_task_duration_seconds How long exchanges took, request to last byte.")
        lines.append("# TYPE tollgate_task_duration_seconds histogram")
        for (index, bound) in Self.bucketBounds.enumerated() {
            lines.append("tollgate_task_duration_seconds_bucket{le=\"\(bound)\"} \(state.durationBuckets[index])")
        }
        lines.append("tollgate_task_duration_seconds_bucket{le=\"+Inf\"} \(state.durationCount)")
        lines.append("tollgate_task_duration_seconds_sum \(state.durationSum)")
        lines.append("tollgate_task_duration_seconds_count \(state.durationCount)")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
