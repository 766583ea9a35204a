import Logging
import NIOConcurrencyHelpers
import TollgatePolicy
import TollgateTLS

/// The TLS side of one listener (`listen[].tls`): the context its new connections handshake
/// with, made again from the files after every reload.
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
        var context: TLSContext
    }

    /// The address as configured (port 0 stays 0), to find the listener after a reload.
    let configuredAddress: ListenAddress
    /// The ALPN protocols offered (``ClientProtocolSelection/offeredProtocols(for:)``).
    let protocols: [String]
    private let state: NIOLockedValueBox<State>

    static let logger = Logger(label: "tollgate.listener")

    /// Makes the context for `settings`.
    /// - Throws: ``ListenerTLSError`` naming the file at fault.
    init(
        settings: PolicyConfiguration.Listener.TLS,
        configuredAddress: ListenAddress,
        generation: Int,
        protocols: [String] = ClientProtocolSelection.offeredProtocols
    ) throws {
        self.configuredAddress = configuredAddress
        self.protocols = protocols
        self.state = NIOLockedValueBox(State(generation: generation, context: try Self.makeContext(settings, protocols: protocols)))
    }

    /// The context for a connection accepted now: after a reload (a new `generation`), made again
    /// from the listener's entry in the new configuration.
    func context(policy: any ProxyPolicy) -> TLSContext {
        let generation = policy.generation
        return state.withLockedValue { state in
            guard state.generation != generation else { return state.context }
            state.generation = generation
            let address = configuredAddress
            let entry = policy.configuration.listeners.first {
                $0.address.host == address.host && $0.address.port == address.port
            }
            guard let settings = entry?.tls else {
                Self.logger.warning(
                    "the reloaded configuration has no tls for the listener \(address); it keeps its certificates (turning TLS off, or moving a listener, takes a restart)"
                )
                return state.context
            }
            // Made again even when the settings are equal: a renewed certificate keeps its path.
            do {
                state.context = try Self.makeContext(settings, protocols: protocols)
            } catch {
                Self.logger.error("listener \(address): the certificates in force stay: \(error)")
            }
            return state.context
        }
    }

    /// The server context for `settings`: every certificate loaded and checked, the first the
    /// default, the others chosen by SNI; ALPN as ``ClientProtocolSelection`` offers it.
    static func makeContext(
        _ settings: PolicyConfiguration.Listener.TLS,
        protocols: [String] = ClientProtocolSelection.offeredProtocols
    ) throws -> TLSContext {
        var identities: [Identity] = []
        for files in settings.certificates {
            switch files.load() {
            case .success(let identity): identities.append(identity)
            case .failure(let error): throw ListenerTLSError(description: error.message)
            }
        }
        guard !identities.isEmpty else { throw ListenerTLSError(description: "tls lists no certificate") }
        let certificates = ServerCertificates(identities)
        var configuration = TLSConfiguration.makeServerConfiguration(identity: certificates.defaultIdentity)
        configuration.minimumVersion = settings.minimumVersion.tlsVersion
        configuration.applicationProtocols = protocols
        if identities.count > 1 {
            configuration.serverNameHandler = { name in certificates.identity(forServerName: name) }
        }
        do {
            return try TLSContext(configuration: configuration)
        } catch {
            throw ListenerTLSError(description: "cannot use the certificates: \(error)")
        }
    }
}

/// Why a listener's certificates cannot be used; names the file and the reason.
struct ListenerTLSError: Error, CustomStringConvertible {
    let description: String
}
