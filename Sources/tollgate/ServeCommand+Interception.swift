import Foundation
import TollgatePolicy
import TollgateProxy

extension ServeCommand {
    /// The interceptor for CONNECTs to hosts whose rule says `intercept: true`, from the CA in
    /// `interception.ca-dir`.
    ///
    /// When a rule intercepts, a CA that is missing, unreadable, readable by others or expired
    /// stops the start (exit 1) with the directory and the command that fixes it. When none does,
    /// an existing CA is still loaded (a reload may add such a rule) and a broken one is only
    /// warned about. A CA that ends within 30 days is warned about either way.
    static func prepareInterception(_ configuration: PolicyConfiguration) throws -> Interceptor? {
        let directory = configuration.interception.resolvedCADirectory(environment: ProcessInfo.processInfo.environment)
        let intercepting = configuration.hosts.filter(\.intercept)
        let present = FileManager.default.fileExists(atPath: directory + "/ca.pem")
        guard present || !intercepting.isEmpty else { return nil }
        let interceptor: Interceptor
        do {
            interceptor = try Interceptor.load(directory: directory)
        } catch {
            guard intercepting.isEmpty else {
                let rules = intercepting.map { $0.patterns.first?.description ?? "?" }.joined(separator: ", ")
                throw CommandFailure.user("interception (intercept: true for \(rules)): \(error)")
            }
            standardError("tollgate: warning: interception is off: \(error)")
            return nil
        }
        if let warning = interceptor.expiryWarning() { standardError("tollgate: warning: \(warning)") }
        return interceptor
    }
}
