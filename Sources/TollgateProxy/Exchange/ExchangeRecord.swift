import Foundation
import TollgateHTTP
import TollgateLoop
import TollgateSession

/// What an exchange logs when it ends (the access log, `/metrics`, and the recent exchanges of
/// `GET /har` and the live view).
///
/// Everything but the route is kept in one copy-on-write box: the record is copied as the
/// exchange ends (into `/metrics`' recent exchanges, whose ring keeps it), and as a plain struct
/// of strings, header lists and two transactions' metrics each copy retained every one of them —
/// a fifth of all reference counting on a cache hit (bench/counts.sh). Now a copy is one retain.
/// The route stays outside the box: the journal drops it (it must not keep sessions alive)
/// without copying the rest.
struct ExchangeRecord: Sendable {
    /// The recorded values (see the forwarding properties below for what each is).
    private struct Fields: Sendable {
        let head: ClientRequestHead
        let clientAddress: String
        let clientTLS: ClientTLS?
        let started = TickClock.date
        var status: Int?
        var bodyBytes: Int64 = 0
        var requestBodyBytes: Int64 = 0
        var cacheOutcome: CacheOutcome?
        var errorCode: String?
        /// The task's transactions (one array: a copy is one retain, not one per field of each).
        var transactions: [TransactionMetrics] = []
        var upstreamIndex: Int?
        var upstreamBytesReceived: Int64 = 0
        var upstreamBytesSent: Int64 = 0
        var isTunnel = false
        var webSocket: WebSocketTotals?
        var relayEnd: RelayEnd?
    }

    @CopyOnWrite private var fields: Fields
    var route: ProxyRoute?

    init(head: ClientRequestHead, clientAddress: String, clientTLS: ClientTLS? = nil) {
        _fields = CopyOnWrite(wrappedValue: Fields(head: head, clientAddress: clientAddress, clientTLS: clientTLS))
    }

    var head: ClientRequestHead { fields.head }
    var clientAddress: String { fields.clientAddress }
    /// The TLS version the client's connection uses (`TLSv1.3`), nil for plain HTTP.
    var clientTLS: String? { fields.clientTLS?.version }
    /// The subject of the client's verified certificate (`client-auth`), nil without one.
    var clientCertificateSubject: String? { fields.clientTLS?.certificate?.subject }
    var started: Date { fields.started }
    var status: Int? {
        get { fields.status }
        set { fields.status = newValue }
    }
    var bodyBytes: Int64 {
        get { fields.bodyBytes }
        set { fields.bodyBytes = newValue }
    }
    /// Request body bytes received from the client.
    var requestBodyBytes: Int64 {
        get { fields.requestBodyBytes }
        set { fields.requestBodyBytes = newValue }
    }
    /// What the cache did (for /metrics).
    var cacheOutcome: CacheOutcome? {
        get { fields.cacheOutcome }
        set { fields.cacheOutcome = newValue }
    }
    /// The `Tollgate-Error` code when the proxy answered itself.
    var errorCode: String? {
        get { fields.errorCode }
        set { fields.errorCode = newValue }
    }
    /// The task's last transaction (the one whose response the client got), from its metrics.
    var transaction: TransactionMetrics? { fields.transactions.last }
    /// The task's last transaction that went to the network (for a revalidation, the conditional
    /// request, while ``transaction`` is the stored response served after it).
    var upstreamTransaction: TransactionMetrics? { fields.upstreamIndex.map { fields.transactions[$0] } }
    /// Body bytes the task's transactions received from and sent to upstreams (every redirect
    /// and retry).
    var upstreamBytesReceived: Int64 {
        get { fields.upstreamBytesReceived }
        set { fields.upstreamBytesReceived = newValue }
    }
    var upstreamBytesSent: Int64 {
        get { fields.upstreamBytesSent }
        set { fields.upstreamBytesSent = newValue }
    }
    /// Whether the exchange was a CONNECT tunnel (or a tunnel that an upgrade became).
    var isTunnel: Bool {
        get { fields.isTunnel }
        set { fields.isTunnel = newValue }
    }
    /// How the tunnel or upgraded connection ended (nil for any other exchange).
    var relayEnd: RelayEnd? {
        get { fields.relayEnd }
        set { fields.relayEnd = newValue }
    }
    /// Whether the proxy closed the tunnel (or upgraded connection) for `limits.tunnel-idle-timeout`.
    var closedIdle: Bool { relayEnd == .idleTimeout }
    /// What passed through a WebSocket upgrade (nil for anything else).
    var webSocket: WebSocketTotals? {
        get { fields.webSocket }
        set { fields.webSocket = newValue }
    }

    /// Takes what the exchange reports from the task's metrics.
    mutating func collect(_ metrics: TaskMetrics) {
        fields.transactions = metrics.transactionMetrics
        fields.upstreamIndex = metrics.transactionMetrics.lastIndex { $0.resourceFetchType == .networkLoad }
        for transaction in metrics.transactionMetrics where transaction.resourceFetchType == .networkLoad {
            fields.upstreamBytesReceived += transaction.countOfResponseBodyBytesReceived
            fields.upstreamBytesSent += transaction.countOfRequestBodyBytesSent
        }
    }

    /// hit, miss, revalidated, stale or bypass (``ProxyMetrics/cacheResult(_:)``).
    var cacheResult: String { ProxyMetrics.cacheResult(cacheOutcome) }

    /// Whether this exchange stored its response.
    var stored: Bool { cacheOutcome?.stored ?? false }

    /// Why the response was not stored: nil when it was, and when it came from the cache
    /// (a hit, a revalidation, a stale response served); else the cache's reason (`no-store`,
    /// `private`, `size-limit`, `vary-star`, `policy`, `truncated`, `status`, …), `error` for an
    /// answer of the proxy's own, `method` for a method the cache does not store, `bypass`
    /// when no cache was used.
    var notStoredReason: String? {
        guard let outcome = cacheOutcome else { return errorCode != nil ? "error" : "bypass" }
        if outcome.stored || outcome.isHit { return nil }
        if outcome.isUnansweredMiss, errorCode != nil { return "error" }  // the proxy's 504
        if let detail = outcome.detail { return detail }
        if errorCode != nil { return "error" }
        switch outcome.result {
        case .method: return "method"
        case .bypass: return "bypass"
        case .request where status == nil: return "incomplete"
        default: return status == nil ? "incomplete" : "not-storable"
        }
    }

    /// The access log entry of an exchange that ended at `ended` (the instant its metrics use
    /// too: one clock read for both).
    func entry(ended: Date = Date()) -> AccessLogEntry {
        let upstream = upstreamTransaction
        return AccessLogEntry(
            clientAddress: clientAddress,
            clientTLS: clientTLS,
            clientCertificate: clientCertificateSubject,
            time: Int(started.timeIntervalSince1970),
            method: head.method,
            target: head.target,
            version: head.versionText,
            status: status,
            bodyBytes: bodyBytes,
            referer: head.headerFields[.referer],
            userAgent: head.headerFields[.userAgent],
            rule: route?.ruleLabel ?? "-",
            session: route?.sessionName ?? "-",
            durationMilliseconds: Int(ended.timeIntervalSince(started) * 1000),
            errorCode: errorCode,
            cache: cacheResult,
            stored: stored,
            notStoredReason: notStoredReason,
            timings: (upstream ?? transaction).map(ExchangeTimings.init),
            upstreamProtocol: upstream?.networkProtocolName,
            upstreamAddress: upstream?.remoteAddress,
            reused: upstream?.isReusedConnection,
            webSocket: webSocket,
            tunnel: webSocket == nil ? relayEnd.map { TunnelTotals(toUpstream: requestBodyBytes, toClient: bodyBytes, end: $0) } : nil
        )
    }
}
