import Foundation
import TollgateSession

/// How long each phase of an exchange's upstream transaction took, in milliseconds, from the
/// task's ``TransactionMetrics``: the access log's `timings`, HAR's `timings` and the live view's
/// waterfall. A phase that did not happen is nil: no lookup or connect on a reused connection,
/// no TLS for plain HTTP, none of them for a response served from the cache.
struct ExchangeTimings: Sendable, Equatable {
    /// Name lookup (`dns_ms`).
    var dns: Double?
    /// TCP connect, up to the start of the TLS handshake when there is one (`connect_ms`).
    var connect: Double?
    /// TLS handshake (`tls_ms`).
    var tls: Double?
    /// From the request's first byte written to the response's first byte read (`ttfb_ms`); for a
    /// response from the cache, from the fetch's start to the response's start.
    var firstByte: Double?
    /// From the response's first byte to its last (`transfer_ms`).
    var transfer: Double?

    /// The phases of `transaction`.
    init(_ transaction: TransactionMetrics) {
        dns = Self.milliseconds(transaction.domainLookupStartDate, transaction.domainLookupEndDate)
        connect = Self.milliseconds(
            transaction.connectStartDate,
            transaction.secureConnectionStartDate ?? transaction.connectEndDate
        )
        tls = Self.milliseconds(transaction.secureConnectionStartDate, transaction.secureConnectionEndDate)
        firstByte = Self.milliseconds(
            transaction.requestStartDate ?? transaction.fetchStartDate,
            transaction.responseStartDate
        )
        transfer = Self.milliseconds(transaction.responseStartDate, transaction.responseEndDate)
    }

    /// Milliseconds from `start` to `end` (never negative), rounded to a microsecond; nil unless both are known.
    static func milliseconds(_ start: Date?, _ end: Date?) -> Double? {
        guard let start, let end else { return nil }
        return (max(0, end.timeIntervalSince(start)) * 1_000_000).rounded() / 1000
    }

    /// The JSON object `{"dns_ms":…,"connect_ms":…,"tls_ms":…,"ttfb_ms":…,"transfer_ms":…}`, null
    /// for the phases that did not happen.
    var json: String {
        func number(_ value: Double?) -> String { value.map(Self.format) ?? "null" }
        return "{\"dns_ms\":\(number(dns)),\"connect_ms\":\(number(connect)),\"tls_ms\":\(number(tls)),"
            + "\"ttfb_ms\":\(number(firstByte)),\"transfer_ms\":\(number(transfer))}"
    }

    /// A JSON number: whole milliseconds without a fraction, others with up to three decimals.
    static func format(_ value: Double) -> String {
        if value == value.rounded() { return String(Int64(value)) }
        return String(format: "%.3f", value)
    }
}
