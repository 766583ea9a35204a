public import Logging

/// What the trust decisions of a ``PolicyRuntime``'s sessions share: the `tollgate.trust` logger,
/// the failure counter `/metrics` reads, and the files trust settings name (client identities,
/// root bundles). One per runtime, kept across reloads; every ``PolicySessionDelegate`` of the
/// runtime holds it.
public final class TrustEnvironment: Sendable {
    /// Where trust events are logged, one line each (label `tollgate.trust`).
    public let logger: Logger
    /// Trust failures by host.
    public let failures: TrustFailureCounter
    /// The `client-identity` and `roots` files, read once (until a reload).
    public let files: TrustFileCache
    /// When the chains upstream servers were last verified with expire, by host.
    public let expiries: CertificateExpiryRecord

    /// Creates an environment.
    ///
    /// - Parameters:
    ///   - logger: where events are logged; `Logger(label: "tollgate.trust")` unless given.
    ///   - failures: the counter; a new one unless given.
    ///   - files: the cache of files read; a new one unless given.
    ///   - expiries: the record of certificate expiries; a new one unless given.
    public init(
        logger: Logger = Logger(label: "tollgate.trust"),
        failures: TrustFailureCounter = TrustFailureCounter(),
        files: TrustFileCache = TrustFileCache(),
        expiries: CertificateExpiryRecord = CertificateExpiryRecord()
    ) {
        self.logger = logger
        self.failures = failures
        self.files = files
        self.expiries = expiries
    }

    /// Logs `event` (one line, with `host`, `port`, `rule` and `event` as metadata) and counts it.
    public func record(_ event: TrustEvent) {
        failures.record(host: event.host, kind: event.kind)
        logger.log(
            level: event.kind.logLevel,
            "\(event.message)",
            metadata: [
                "event": "\(event.kind)",
                "host": "\(event.host)",
                "port": "\(event.port)",
                "rule": "\(event.rule)",
            ]
        )
    }
}
