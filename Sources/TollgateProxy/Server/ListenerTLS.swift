import Logging
import NIOConcurrencyHelpers
import TollgatePolicy
import TollgateTLS

/// The TLS side of one listener (`listen[].tls`): the context its new connections handshake
/// with (and check client certificates in, with `client-auth`), made again from the files after
/// every reload.
///
/// A reload puts new certificates in force for the connections accepted after it; connections
/// already open keep the context they started with. The loader has already read the files
/// (`PolicyConfiguration.Listener.TLS`), so a broken file fails the reload and the certificates in
/// force stay; should the files change between the loader's check and the rebuild, the old
/// context stays too and the problem is logged. The listener finds its entry in the reloaded
/// configuration by its configured address: a listener's address, and whether it has TLS at
/// all, change only with a restart.
final class ListenerTLS: Sendable {
    private struct State {
        /// The policy generation the context was made for.
        var generation: Int
        var settings: Settings
    }

    /// What a connection accepted now handshakes with, and what it does with a client's
    /// certificate.
    struct Settings {
        /// The server context: certificates, ALPN, and the client-certificate check.
        var context: TLSContext
        /// What happens after the handshake with a client's certificate.
        var clientAuth: ClientAuthRules

        init(_ context: TLSContext, _ settings: PolicyConfiguration.Listener.TLS) {
            self.context = context
            self.clientAuth = ClientAuthRules(forwardsCertificate: settings.clientAuth?.forward == .clientCert)
        }
    }

    /// The part of `client-auth` applied once the handshake verified a client's certificate
    /// (``ClientProtocolSelectionHandler``); the context checks the rest — roots, revocation
    /// lists, pins — in the handshake.
    struct ClientAuthRules {
        /// Whether the origin is told of the certificate (`forward: client-cert`).
        var forwardsCertificate = false
    }

    /// The address as configured (port 0 stays 0), to find the listener after a reload.
    let configuredAddress: ListenAddress
    /// The ALPN protocols offered (``ClientProtocolSelection/offeredProtocols(for:)``).
    let protocols: [String]
    private let state: NIOLockedValueBox<State>
    /// Fetches the OCSP responses stapled with `ocsp-stapling: true`; nil without a policy to
    /// fetch through.
    private let stapleFetcher: OCSPStapleFetcher?

    static let logger = Logger(label: "tollgate.listener")

    /// Makes the context for `settings`.
    /// - Throws: ``ListenerTLSError`` naming the file at fault.
    init(
        settings: PolicyConfiguration.Listener.TLS,
        configuredAddress: ListenAddress,
        generation: Int,
        protocols: [String] = ClientProtocolSelection.offeredProtocols,
        policy: (any ProxyPolicy)? = nil,
        offline: OfflineMode = OfflineMode(),
        metrics: ProxyMetrics? = nil,
        stapleArchive: OCSPStapleArchive? = nil
    ) throws {
        self.configuredAddress = configuredAddress
        self.protocols = protocols
        let fetcher = policy.map {
            OCSPStapleFetcher(listener: configuredAddress.description, policy: $0, offline: offline, archive: stapleArchive)
        }
        if let fetcher { metrics?.noteStapleFetcher(fetcher, listener: configuredAddress.description) }
        let made = try Self.makeContext(settings, protocols: protocols, staples: fetcher?.staples)
        self.stapleFetcher = fetcher
        self.state = NIOLockedValueBox(State(generation: generation, settings: Settings(made.context, settings)))
        fetcher?.fetch(for: made.fetched)
    }

    /// Stops fetching OCSP responses (the listener closes).
    func stop() {
        stapleFetcher?.stop()
    }

    /// The context for a connection accepted now (``settings(policy:)``).
    func context(policy: any ProxyPolicy) -> TLSContext {
        settings(policy: policy).context
    }

    /// The settings for a connection accepted now: after a reload (a new `generation`), made
    /// again from the listener's entry in the new configuration.
    func settings(policy: any ProxyPolicy) -> Settings {
        let generation = policy.generation
        return state.withLockedValue { state in
            guard state.generation != generation else { return state.settings }
            state.generation = generation
            let address = configuredAddress
            let entry = policy.configuration.listeners.first {
                $0.address.host == address.host && $0.address.port == address.port
            }
            guard let settings = entry?.tls else {
                Self.logger.warning(
                    "the reloaded configuration has no tls for the listener \(address); it keeps its certificates (turning TLS off, or moving a listener, takes a restart)"
                )
                return state.settings
            }
            // Made again even when the settings are equal: a renewed certificate (or client CA
            // bundle, or revocation list, or a rotated ticket key) keeps its path.
            do {
                let made = try Self.makeContext(settings, protocols: protocols, staples: stapleFetcher?.staples)
                state.settings = Settings(made.context, settings)
                stapleFetcher?.fetch(for: made.fetched)
            } catch {
                Self.logger.error("listener \(address): the certificates in force stay: \(error)")
            }
            return state.settings
        }
    }

    /// The server context for `settings`: every certificate loaded and checked, the first the
    /// default, the others chosen by SNI; ALPN as ``ClientProtocolSelection`` offers it. With
    /// `ocsp-stapling` and `staples`, the handshakes staple from `staples`, and `fetched` lists
    /// the certificate files and chains whose responses are to be fetched into it (those without
    /// an `ocsp-response` file).
    static func makeContext(
        _ settings: PolicyConfiguration.Listener.TLS,
        protocols: [String] = ClientProtocolSelection.offeredProtocols,
        staples: OCSPStaples? = nil
    ) throws -> (context: TLSContext, fetched: [(file: String, chain: [Certificate])]) {
        var identities: [Identity] = []
        var fetched: [(file: String, chain: [Certificate])] = []
        for files in settings.certificates {
            switch files.load() {
            case .success(let identity):
                identities.append(identity)
                if settings.ocspStapling, files.ocspResponse == nil { fetched.append((files.certificate, identity.certificateChain)) }
            case .failure(let error): throw ListenerTLSError(description: error.message)
            }
        }
        guard !identities.isEmpty else { throw ListenerTLSError(description: "tls lists no certificate") }
        let certificates = ServerCertificates(identities)
        var configuration = TLSConfiguration.makeServerConfiguration(identity: certificates.defaultIdentity)
        configuration.minimumVersion = settings.minimumVersion.tlsVersion
        configuration.applicationProtocols = protocols
        // Never with client-auth: the loader says so, and the context issues none to a server
        // that asks for certificates.
        configuration.issuesSessionTickets = settings.sessionTickets
        do {
            configuration.sessionTicketKeys = try settings.sessionTicketKeyFiles.map(SessionTicketKey.init(contentsOf:))
        } catch {
            throw ListenerTLSError(description: "\(error)")
        }
        if identities.count > 1 {
            configuration.serverNameHandler = { name in certificates.identity(forServerName: name) }
        }
        if let clientAuth = settings.clientAuth {
            // The bundles and lists are read as the context is made (at start and every reload).
            configuration.clientCertificateRequirement = clientAuth.verify == .required ? .required : .requested
            configuration.trustRoots = TrustRoots(pemFiles: clientAuth.roots, revocationListFiles: clientAuth.crls)
            configuration.clientCertificatePins = clientAuth.pins
        }
        if settings.ocspStapling, let staples { configuration.ocspStaples = staples }
        do {
            return (try TLSContext(configuration: configuration), settings.ocspStapling && staples != nil ? fetched : [])
        } catch {
            throw ListenerTLSError(description: "cannot use the certificates: \(error)")
        }
    }
}

/// Why a listener's certificates cannot be used; names the file and the reason.
struct ListenerTLSError: Error, CustomStringConvertible {
    let description: String
}
