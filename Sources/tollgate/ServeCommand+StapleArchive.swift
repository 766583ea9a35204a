import Foundation
import TollgatePolicy
import TollgateProxy

extension ServeCommand {
    /// Where the OCSP responses of the TLS listeners are kept across restarts: `ocsp/` in the
    /// data directory, opened when a listener has TLS (a reload may turn `ocsp-stapling` on).
    /// Nil, with a warning, when it cannot be opened: the responses are then kept in memory.
    static func openStapleArchive(
        _ configuration: PolicyConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> OCSPStapleArchive? {
        guard configuration.listeners.contains(where: { $0.tls != nil }) else { return nil }
        let directory = CookieCredentialStores.defaultDirectory(environment: environment) + "/ocsp"
        do {
            return try OCSPStapleArchive(directory: directory)
        } catch {
            standardError("tollgate: warning: OCSP responses kept in memory only: cannot open \(directory): \(error)")
            return nil
        }
    }
}
