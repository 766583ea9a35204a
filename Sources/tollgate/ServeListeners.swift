import Foundation
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession

/// The listeners `tollgate serve` runs: one ``ProxyServer`` per `listen` entry and the admin API.
struct ServeListeners {
    let servers: [ProxyServer]
    let admin: AdminServer?

    /// Binds every listener, or none: when one cannot be bound, those already bound are closed
    /// and the error is thrown (exit 1). The admin listener of the embedded default is optional:
    /// when its port is taken the proxy starts without it, with a warning. A listener whose
    /// address is that of a socket in `inherited` (passed by systemd) serves that socket; a
    /// socket no listener names is an error, before anything is bound (its clients would wait
    /// forever).
    static func start(
        _ configuration: PolicyConfiguration,
        runtime: PolicyRuntime,
        accessLog: AccessLog,
        adminIsOptional: Bool,
        cache: ResponseCache? = nil,
        interceptor: Interceptor? = nil,
        ownListeners: OwnListeners = OwnListeners(),
        offline: OfflineMode = OfflineMode(),
        inherited: InheritedListeners = InheritedListeners(),
        stapleArchive: OCSPStapleArchive? = nil
    ) async throws -> ServeListeners {
        func take(_ address: PolicyConfiguration.Address) -> CInt? {
            inherited.take(ListenAddress(host: address.host, port: address.port))
        }
        let sockets = configuration.listeners.map { take($0.address) }
        let adminSocket = configuration.admin.flatMap { take($0.address) }
        let unnamed = inherited.untaken
        if !unnamed.isEmpty {
            inherited.closeUntaken()
            throw CommandFailure.user(
                "the service manager passed a listening socket on \(unnamed.joined(separator: ", ")) (LISTEN_FDS) that no "
                    + "listen[].address or admin.address names, so its clients would wait unserved: give a listener that IP "
                    + "address and port, or take the socket out of the socket unit"
            )
        }
        let metrics = ProxyMetrics()
        let rateLimiter = ClientRateLimiter()
        let connectionCounter = ClientConnectionCounter()
        var servers: [ProxyServer] = []
        do {
            for (listener, socket) in zip(configuration.listeners, sockets) {
                let mode: ListenerMode
                if listener.mode == .reverse, let upstream = listener.upstream {
                    mode = .reverse(upstream: upstream)
                } else {
                    mode = .forward
                }
                let server = try await ProxyServer.start(
                    .init(
                        listen: ListenAddress(host: listener.address.host, port: listener.address.port),
                        mode: mode,
                        accessLog: accessLog,
                        metrics: metrics,
                        interceptor: interceptor,
                        offline: offline,
                        tls: listener.tls,
                        h2c: listener.h2c,
                        rateLimiter: rateLimiter,
                        proxyProtocol: listener.proxyProtocol,
                        throttle: listener.throttle,
                        maxConnections: listener.maxConnections,
                        connectionCounter: connectionCounter,
                        inheritedSocket: socket,
                        stapleArchive: stapleArchive
                    ),
                    policy: runtime,
                    ownListeners: ownListeners
                )
                servers.append(server)
            }
        } catch let error as ProxyServerError {
            for server in servers { await server.shutdown(gracePeriod: .zero) }
            throw CommandFailure.user(error.description)
        }
        var admin: AdminServer?
        if let address = configuration.admin?.address {
            do {
                admin = try await AdminServer.start(
                    listen: ListenAddress(host: address.host, port: address.port),
                    runtime: runtime,
                    ownListeners: ownListeners,
                    metrics: metrics,
                    cache: cache,
                    interceptor: interceptor,
                    offline: offline,
                    inheritedSocket: adminSocket
                )
            } catch let error as ProxyServerError where adminIsOptional {
                standardError("tollgate: warning: the admin API is not running: \(error)")
            } catch let error as ProxyServerError {
                for server in servers { await server.shutdown(gracePeriod: .zero) }
                throw CommandFailure.user("admin: \(error)")
            }
        }
        return ServeListeners(servers: servers, admin: admin)
    }

    /// `listening on ADDRESS (MODE)`, one per listener, the admin API's last.
    var listeningLines: [String] {
        servers.map { "listening on \($0.boundAddress) (\($0.configuration.mode))" }
            + (admin.map { ["listening on \($0.boundAddress) (admin)"] } ?? [])
    }

    /// Stops every listener; exchanges in flight get `gracePeriod` to finish.
    func shutdown(gracePeriod: Duration) async {
        await admin?.shutdown()
        await withTaskGroup(of: Void.self) { group in
            for server in servers {
                group.addTask { await server.shutdown(gracePeriod: gracePeriod) }
            }
        }
    }
}
