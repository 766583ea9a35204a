import Foundation
import NIOCore
import TollgateHTTP
import TollgateLoop
import TollgateSession

/// What a client connection tells the exchange serving its current request. Called on the
/// connection's event loop.
protocol ClientExchange: AnyObject {
    /// Starts serving the request (the connection has made the exchange its current one).
    func start()
    /// A piece of the request body.
    func clientBodyReceived(_ buffer: ByteBuffer)
    /// The request (head and body) has arrived completely.
    func clientRequestEnded()
    /// The rest of the request was malformed or too slow: answer with `error` if nothing was
    /// sent yet; the connection closes after.
    func clientRequestFailed(_ error: ClientRequestError)
    /// The client closed the connection.
    func clientClosed()
    /// The client's socket stopped or started taking bytes.
    func clientWritabilityChanged(_ writable: Bool)
}

/// What an exchange logs when it ends (the access log, `/metrics`, and the recent exchanges of
/// `GET /har` and the live view).
struct ExchangeRecord: Sendable {
    let head: ClientRequestHead
    let clientAddress: String
    /// The TLS version the client's connection uses (`TLSv1.3`), nil for plain HTTP.
    let clientTLS: String?
    let started = TickClock.date
    var status: Int?
    var bodyBytes: Int64 = 0
    /// Request body bytes received from the client.
    var requestBodyBytes: Int64 = 0
    var route: ProxyRoute?
    /// What the cache did (for /metrics).
    var cacheOutcome: CacheOutcome?
    /// The `Tollgate-Error` code when the proxy answered itself.
    var errorCode: String?
    /// The task's last transaction (the one whose response the client got), from its metrics.
    var transaction: TransactionMetrics?
    /// The task's last transaction that went to the network (for a revalidation, the conditional
    /// request, while ``transaction`` is the stored response served after it).
    var upstreamTransaction: TransactionMetrics?
    /// Body bytes the task's transactions received from and sent to upstreams (every redirect
    /// and retry).
    var upstreamBytesReceived: Int64 = 0
    var upstreamBytesSent: Int64 = 0
    /// Whether the exchange was a CONNECT tunnel (or a tunnel that an upgrade became).
    var isTunnel = false
    /// What passed through a WebSocket upgrade (nil for anything else).
    var webSocket: WebSocketTotals?

    init(head: ClientRequestHead, clientAddress: String, clientTLS: String? = nil) {
        self.head = head
        self.clientAddress = clientAddress
        self.clientTLS = clientTLS
    }

    /// Takes what the exchange reports from the task's metrics.
    mutating func collect(_ metrics: TaskMetrics) {
        transaction = metrics.transactionMetrics.last
        upstreamTransaction = metrics.transactionMetrics.last { $0.resourceFetchType == .networkLoad }
        for transaction in metrics.transactionMetrics where transaction.resourceFetchType == .networkLoad {
            upstreamBytesReceived += transaction.countOfResponseBodyBytesReceived
            upstreamBytesSent += transaction.countOfRequestBodyBytesSent
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
            webSocket: webSocket
        )
    }
}
