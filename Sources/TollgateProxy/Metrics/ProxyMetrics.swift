import Foundation
import NIOConcurrencyHelpers
public import Prometheus
import TollgateHTTP
public import TollgateSession

/// The metrics `GET /metrics` reports, in a swift-prometheus registry of their own: requests by
/// cache result, upstream errors by kind, task durations, open client connections, body bytes
/// in and out, upstream connect/TLS/first-byte times; and, read at scrape time
/// (``exposition(runtime:cache:interceptor:offline:)``), TLS trust failures, the cache's figures,
/// interception and offline misses. Shared by every listener of a process, and by the admin API.
///
/// Each instance owns its ``registry``: nothing is bootstrapped into swift-metrics' global
/// `MetricsSystem`, so many proxies in one process (the tests) count apart. Code that speaks
/// swift-metrics records into the same registry through ``metricsFactory``.
///
/// It also keeps the recent exchanges (``journal``) that `GET /har` and the live view show.
public final class ProxyMetrics: Sendable {
    /// The registry every series is in.
    public let registry: PrometheusCollectorRegistry
    /// The recent exchanges (`log.har-entries` of them).
    let journal = ExchangeJournal()

    /// Requests by cache result, in the order of ``cacheResults``.
    private let requests: [Counter]
    private let taskDuration: ValueHistogram
    private let upstreamConnect: ValueHistogram
    private let upstreamTLS: ValueHistogram
    private let upstreamFirstByte: ValueHistogram
    private let openConnections: Gauge
    private let clientBytesIn: Counter
    private let clientBytesOut: Counter
    private let upstreamBytesIn: Counter
    private let upstreamBytesOut: Counter
    private let webSocketConnections: Counter
    private let tunnelIdleCloses: Counter
    /// WebSocket messages relayed: to the upstream, to the client.
    private let webSocketMessages: (toUpstream: Counter, toClient: Counter)
    /// Failed client handshakes on TLS listeners, in the order of ``ClientHandshakeFailure/allCases``.
    private let clientHandshakeFailures: [Counter]
    /// Values read at scrape time, as last written into their counters (``syncCounter``).
    let scraped = NIOLockedValueBox<[String: Int64]>([:])
    /// The scrape-time gauges labelled by a file, listener, host or target, as the last scrape wrote
    /// them (by name and labels): one not written again — its file, listener or host gone from the
    /// configuration, its host out of the record — is removed from the registry, not kept with its
    /// last value (an alert on a removed listener's certificate expiry would fire for ever).
    let scrapedGauges = NIOLockedValueBox<[String: Gauge]>([:])
    /// The OCSP responses each TLS listener fetched (`ocsp-stapling`), by its configured address.
    private let fetchedStaples = NIOLockedValueBox<[String: OCSPStapleFetcher]>([:])

    /// Notes what `listener` fetches, for ``syncCertificateExpiries`` and `GET /listeners`.
    func noteStapleFetcher(_ fetcher: OCSPStapleFetcher, listener: String) {
        fetchedStaples.withLockedValue { $0[listener] = fetcher }
    }

    /// The TLS listeners' staple fetchers, by listener address.
    var stapleFetchers: [String: OCSPStapleFetcher] { fetchedStaples.withLockedValue { $0 } }

    /// Upper bounds (seconds) of the task-duration histogram buckets.
    static let bucketBounds: [Double] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30]
    /// Upper bounds (seconds) of the upstream phase histograms (connect, TLS, first byte).
    static let phaseBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]

    /// A swift-metrics factory recording into ``registry``: pass it as `factory:` to swift-metrics'
    /// `Counter`, `Gauge`, `Timer` and `Recorder` (never bootstrap it globally).
    public var metricsFactory: PrometheusMetricsFactory { PrometheusMetricsFactory(registry: registry) }

    /// Creates empty metrics in a registry of their own.
    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        let requestsName = MetricNameDescriptor.named("tollgate_requests_total", help: "Requests by what the cache did.")
        requests = Self.cacheResults.map { registry.makeCounter(descriptor: requestsName, labels: [("cache", $0)]) }
        func histogram(_ name: String, _ help: String, _ buckets: [Double]) -> ValueHistogram {
            registry.makeValueHistogram(descriptor: .named(name, help: help), buckets: buckets)
        }
        taskDuration = histogram(
            "tollgate_task_duration_seconds", "How long exchanges took, request to last byte.", Self.bucketBounds
        )
        upstreamConnect = histogram(
            "tollgate_upstream_connect_seconds", "TCP connects to upstreams (new connections only).", Self.phaseBounds
        )
        upstreamTLS = histogram(
            "tollgate_upstream_tls_seconds", "TLS handshakes with upstreams (new https connections only).",
            Self.phaseBounds
        )
        upstreamFirstByte = histogram(
            "tollgate_upstream_first_byte_seconds",
            "From a request's first byte sent upstream to the response's first byte.", Self.phaseBounds
        )
        openConnections = registry.makeGauge(
            descriptor: .named("tollgate_client_connections", help: "Client connections open on the proxy's listeners.")
        )
        let bytesIn = MetricNameDescriptor.named(
            "tollgate_bytes_in_total", help: "Body bytes received: request bodies from clients, response bodies from upstreams."
        )
        clientBytesIn = registry.makeCounter(descriptor: bytesIn, labels: [("peer", "client")])
        upstreamBytesIn = registry.makeCounter(descriptor: bytesIn, labels: [("peer", "upstream")])
        let bytesOut = MetricNameDescriptor.named(
            "tollgate_bytes_out_total", help: "Body bytes sent: response bodies to clients, request bodies to upstreams."
        )
        clientBytesOut = registry.makeCounter(descriptor: bytesOut, labels: [("peer", "client")])
        upstreamBytesOut = registry.makeCounter(descriptor: bytesOut, labels: [("peer", "upstream")])
        webSocketConnections = registry.makeCounter(
            descriptor: .named("tollgate_websocket_connections_total", help: "WebSocket connections relayed, counted when they end.")
        )
        let messages = MetricNameDescriptor.named(
            "tollgate_websocket_messages_total", help: "Whole WebSocket data messages relayed, by direction."
        )
        webSocketMessages = (
            registry.makeCounter(descriptor: messages, labels: [("direction", "to_upstream")]),
            registry.makeCounter(descriptor: messages, labels: [("direction", "to_client")])
        )
        tunnelIdleCloses = registry.makeCounter(
            descriptor: .named(
                "tollgate_tunnel_idle_closes_total",
                help: "Tunnels and non-WebSocket upgrades the proxy closed for limits.tunnel-idle-timeout."
            )
        )
        let handshakeFailures = MetricNameDescriptor.named(
            "tollgate_client_tls_handshake_failures_total",
            help: "Client TLS handshakes on TLS listeners that failed, by reason: alert, failed, closed."
        )
        clientHandshakeFailures = ClientHandshakeFailure.allCases.map {
            registry.makeCounter(descriptor: handshakeFailures, labels: [("reason", $0.rawValue)])
        }
    }

    /// A client's TLS handshake with a TLS listener failed.
    func clientHandshakeFailed(_ reason: ClientHandshakeFailure) {
        clientHandshakeFailures[ClientHandshakeFailure.allCases.firstIndex(of: reason)!].increment()
    }

    private static var webSocketClosesName: MetricNameDescriptor {
        .named("tollgate_websocket_closes_total", help: "Relayed WebSocket connections by the close code that ended them.")
    }

    private static var errorsName: MetricNameDescriptor {
        .named(
            "tollgate_upstream_errors_total", help: "Requests the proxy answered itself, by Tollgate-Error code."
        )
    }

    /// Counts one finished exchange.
    /// - Parameters:
    ///   - outcome: what the cache did (nil without a cache: counted as `bypass`).
    ///   - errorCode: the `Tollgate-Error` code when the proxy answered itself.
    ///   - seconds: how long the exchange took.
    public func record(outcome: CacheOutcome?, errorCode: String?, seconds: Double) {
        requests[Self.cacheResultIndex(outcome)].increment()
        if let errorCode {
            registry.makeCounter(descriptor: Self.errorsName, labels: [("kind", errorCode)]).increment()
        }
        taskDuration.record(seconds)
    }

    /// Counts what an exchange's record says beyond ``record(outcome:errorCode:seconds:)``: body
    /// bytes both ways, and the upstream transaction's phases.
    func recordTraffic(_ record: ExchangeRecord) {
        if record.requestBodyBytes > 0 { clientBytesIn.increment(by: record.requestBodyBytes) }
        if record.bodyBytes > 0 { clientBytesOut.increment(by: record.bodyBytes) }
        if record.upstreamBytesReceived > 0 { upstreamBytesIn.increment(by: record.upstreamBytesReceived) }
        if record.upstreamBytesSent > 0 { upstreamBytesOut.increment(by: record.upstreamBytesSent) }
        if record.closedIdle { tunnelIdleCloses.increment() }
        if let webSocket = record.webSocket {
            webSocketConnections.increment()
            webSocketMessages.toUpstream.increment(by: Int64(webSocket.messagesToUpstream))
            webSocketMessages.toClient.increment(by: Int64(webSocket.messagesToClient))
            registry.makeCounter(descriptor: Self.webSocketClosesName, labels: [("code", String(webSocket.closeCode))]).increment()
        }
        guard let transaction = record.upstreamTransaction else { return }
        let timings = ExchangeTimings(transaction)
        if let connect = timings.connect { upstreamConnect.record(connect / 1000) }
        if let tls = timings.tls { upstreamTLS.record(tls / 1000) }
        if let firstByte = timings.firstByte { upstreamFirstByte.record(firstByte / 1000) }
    }

    /// A finished exchange (a request or a tunnel): its traffic counted, and the exchange kept for
    /// `GET /har` and the live view while `harEntries` (`log.har-entries`) allows any.
    func noteFinished(_ record: ExchangeRecord, url: HTTPURL?, ended: Date, harEntries: Int) {
        recordTraffic(record)
        if harEntries > 0 || !journal.isEmpty {
            journal.append(RecentExchange(record, url: url, ended: ended), capacity: harEntries)
        }
    }

    /// The listener `listener` reached `listen[].max-connections` and stopped accepting.
    func listenerReachedMaximumConnections(_ listener: String) {
        registry.makeCounter(
            descriptor: .named(
                "tollgate_listener_max_connections_reached_total",
                help: "Times a listener reached listen[].max-connections and stopped accepting until a connection closed."
            ),
            labels: [("listener", listener)]
        ).increment()
    }

    /// A client connection opened.
    func connectionOpened() { openConnections.increment() }

    /// A client connection closed.
    func connectionClosed() { openConnections.decrement() }

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
        case .hit: return outcome.isUnansweredMiss ? 1 : 0
        case .stale: return outcome.forwardStatus == 304 ? 2 : 1
        case .uriMiss, .varyMiss, .request, .partial: return 1
        case .method, .bypass: return 4
        }
    }
}
