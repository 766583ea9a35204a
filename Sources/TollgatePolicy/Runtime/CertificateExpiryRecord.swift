public import Foundation
import NIOConcurrencyHelpers

/// When the certificates upstream servers present run out: for each host a rule matched, the
/// earliest `notAfter` of the chain its last verified connection was checked with (leaf,
/// intermediates and anchor), so an operator is warned before a partner's certificate — or a CA
/// on its path — expires (`/metrics`: `tollgate_upstream_certificate_expiry_timestamp_seconds`).
///
/// At most ``maximumHosts`` hosts are kept; later ones are not recorded (a wildcard rule in front
/// of a forward proxy's traffic must not grow the series without bound).
public final class CertificateExpiryRecord: Sendable {
    /// The most hosts kept.
    public static let maximumHosts = 1000

    private let earliest = NIOLockedValueBox<[String: Date]>([:])

    /// An empty record.
    public init() {}

    /// Notes that `host`'s last verified chain expires at `date` (its earliest `notAfter`).
    public func record(host: String, expires date: Date) {
        earliest.withLockedValue { earliest in
            guard earliest[host] != nil || earliest.count < Self.maximumHosts else { return }
            earliest[host] = date
        }
    }

    /// The hosts and when their last verified chain expires.
    public var byHost: [String: Date] { earliest.withLockedValue { $0 } }
}
