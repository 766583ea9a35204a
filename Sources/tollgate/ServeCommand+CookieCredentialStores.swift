import Foundation
import TollgatePolicy

extension ServeCommand {
    /// The credential and cookie stores of `serve`'s sessions, under `$XDG_DATA_HOME/tollgate`
    /// (else `~/.local/share/tollgate`): `credentials/` and `cookies/`. When they cannot be opened
    /// the proxy still starts, with both kept in memory, and says so.
    static func openCookieCredentialStores(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> CookieCredentialStores {
        let directory = CookieCredentialStores.defaultDirectory(environment: environment)
        do {
            return try CookieCredentialStores(directory: directory)
        } catch {
            standardError("tollgate: warning: credentials and cookies kept in memory only: cannot open \(directory): \(error)")
            // Without a directory nothing can fail.
            return try! CookieCredentialStores(directory: nil)
        }
    }
}
