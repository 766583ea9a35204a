import Foundation
import NIOConcurrencyHelpers
import TollgateProxy

/// A ``ProxyServer`` on 127.0.0.1 with an ephemeral port, its access log kept in memory.
final class ProxyFixture: Sendable {
    let server: ProxyServer
    private let log: NIOLockedValueBox<[String]>

    private init(server: ProxyServer, log: NIOLockedValueBox<[String]>) {
        self.server = server
        self.log = log
    }

    static func start() async throws -> ProxyFixture {
        let log = NIOLockedValueBox<[String]>([])
        let configuration = ProxyServer.Configuration(
            listen: ListenAddress(host: "127.0.0.1", port: 0),
            accessLog: AccessLog { line in log.withLockedValue { $0.append(line) } }
        )
        return ProxyFixture(server: try await ProxyServer.start(configuration), log: log)
    }

    /// The port the proxy listens on.
    var port: Int { server.boundAddress.port }

    /// The access log lines written so far.
    var accessLog: [String] { log.withLockedValue { $0 } }
}

/// Runs `body` with a fresh proxy and shuts the proxy down afterwards, also when `body` throws.
func withProxy<T>(_ body: (ProxyFixture) async throws -> T) async throws -> T {
    let proxy = try await ProxyFixture.start()
    do {
        let result = try await body(proxy)
        await proxy.server.shutdown(gracePeriod: .seconds(1))
        return result
    } catch {
        await proxy.server.shutdown(gracePeriod: .seconds(1))
        throw error
    }
}

/// Polls `condition` until it holds; throws after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

struct WaitTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}
