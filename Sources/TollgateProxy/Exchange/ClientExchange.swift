import Foundation
import NIOCore
import TollgateHTTP
import TollgateSession

/// What a client connection tells the exchange serving its current request. Called on the
/// connection's event loop.
protocol ClientExchange: AnyObject {
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

/// What an exchange logs when it ends.
struct ExchangeRecord {
    let head: ClientRequestHead
    let clientAddress: String
    let started = TickClock.date
    var status: Int?
    var bodyBytes: Int64 = 0
    var route: ProxyRoute?
    /// What the cache did (for /metrics).
    var cacheOutcome: CacheOutcome?
    /// The `Tollgate-Error` code when the proxy answered itself.
    var errorCode: String?

    /// The access log entry of an exchange that ended at `ended` (the instant its metrics use
    /// too: one clock read for both).
    func entry(ended: Date = Date()) -> AccessLogEntry {
        AccessLogEntry(
            clientAddress: clientAddress,
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
            errorCode: errorCode
        )
    }
}
