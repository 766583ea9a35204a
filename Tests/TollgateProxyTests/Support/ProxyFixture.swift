import Foundation
import NIOConcurrencyHelpers
import TollgatePolicy
import TollgateProxy
import TollgateSession

/// A ``ProxyServer`` on 127.0.0.1 with an ephemeral port, its rules from a fixed configuration
/// and its access log kept in memory.
final class ProxyFixture: Sendable {
    let server: ProxyServer
    let policy: StaticProxyPolicy
    private let log: NIOLockedValueBox<[String]>

    private init(server: ProxyServer, policy: StaticProxyPolicy, log: NIOLockedValueBox<[String]>) {
        self.server = server
        self.policy = policy
        self.log = log
    }

    static func start(
        configuration: PolicyConfiguration = PolicyConfiguration(),
        mode: ListenerMode = .forward,
        logFormat: PolicyConfiguration.Log.Format = .combined,
        ownListeners: OwnListeners = OwnListeners(),
        h2c: Bool = false,
        maxConnections: Int? = nil
    ) async throws -> ProxyFixture {
        let log = NIOLockedValueBox<[String]>([])
        let policy = StaticProxyPolicy(configuration: configuration)
        let serverConfiguration = ProxyServer.Configuration(
            listen: ListenAddress(host: "127.0.0.1", port: 0),
            mode: mode,
            accessLog: AccessLog(format: logFormat) { line in log.withLockedValue { $0.append(line) } },
            h2c: h2c,
            maxConnections: maxConnections
        )
        do {
            let server = try await ProxyServer.start(serverConfiguration, policy: policy, ownListeners: ownListeners)
            return ProxyFixture(server: server, policy: policy, log: log)
        } catch {
            policy.session.invalidateAndCancel()
            throw error
        }
    }

    /// The port the proxy listens on.
    var port: Int { server.boundAddress.port }

    /// The session every request runs in.
    var session: Session { policy.session }

    /// The access log lines written so far.
    var accessLog: [String] { log.withLockedValue { $0 } }

    /// Stops the server and its session.
    func shutdown(gracePeriod: Duration = .seconds(1)) async {
        await server.shutdown(gracePeriod: gracePeriod)
        session.invalidateAndCancel()
    }
}

/// Runs `body` with a fresh proxy and shuts the proxy down afterwards, also when `body` throws.
func withProxy<T>(
    configuration: PolicyConfiguration = PolicyConfiguration(),
    mode: ListenerMode = .forward,
    logFormat: PolicyConfiguration.Log.Format = .combined,
    h2c: Bool = false,
    maxConnections: Int? = nil,
    _ body: (ProxyFixture) async throws -> T
) async throws -> T {
    let proxy = try await ProxyFixture.start(
        configuration: configuration, mode: mode, logFormat: logFormat, h2c: h2c, maxConnections: maxConnections
    )
    do {
        let result = try await body(proxy)
        await proxy.shutdown()
        return result
    } catch {
        await proxy.shutdown()
        throw error
    }
}

