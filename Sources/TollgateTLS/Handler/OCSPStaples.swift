import NIOConcurrencyHelpers

/// The OCSP responses a server fetched for its certificates while it runs
/// (``TLSConfiguration/ocspStaples``): each handshake that asks staples the one for the
/// certificate served, when current, before the identity's own ``Identity/ocspResponse``.
/// Shared by the contexts a reload makes, so a response fetched once serves them all.
public final class OCSPStaples: Sendable {
    /// A certificate's place: its issuer and serial number.
    private struct Key: Hashable {
        let issuer: String
        let serial: String
        init(_ certificate: Certificate) {
            issuer = certificate.issuer
            serial = certificate.serialNumber
        }
    }

    private let responses = NIOLockedValueBox<[Key: OCSPResponse]>([:])

    /// An empty store.
    public init() {}

    /// The response stapled for `certificate` now: the one fetched last, if any.
    public func response(for certificate: Certificate) -> OCSPResponse? {
        let key = Key(certificate)
        return responses.withLockedValue { $0[key] }
    }

    /// Staples `response` for `certificate` from now on.
    public func set(_ response: OCSPResponse, for certificate: Certificate) {
        let key = Key(certificate)
        responses.withLockedValue { $0[key] = response }
    }
}
