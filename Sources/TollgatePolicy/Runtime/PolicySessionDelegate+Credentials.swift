import Foundation
import TollgateHTTP
public import TollgateSession

/// The task-level answer to HTTP authentication challenges (Basic and Digest), from the rules.
///
/// For a challenge from a host, the host's rule (first match) gives its `credentials`; the first
/// whose `realm` is the challenge's (or that names no realm) answers, its password read now
/// from its environment variable or file (the file's first line) — so a rotated secret is
/// picked up without a reload. The password is never logged, printed or put in an error.
///
/// - First challenge of a space in a task: that credential, with the rule's `persistence`
///   (`none`, `session`, `permanent`) deciding whether the session keeps it once it worked.
/// - Again after a failure (`previousFailureCount` > 0): the next matching credential of the rule
///   that is not the one just refused (`proposedCredential`); if there is none,
///   `performDefaultHandling`. The session never sends a refused credential again, so the client
///   gets the origin's 401.
/// - No rule credential, or its password cannot be read: `performDefaultHandling` — the session
///   answers from its credential storage (what `tollgate credentials set` stored, or what
///   worked earlier), and otherwise gives the 401 to the client.
/// - Any other kind of challenge: `performDefaultHandling`.
extension PolicySessionDelegate {
    public func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        if let credential = credential(answering: challenge) {
            completionHandler(.useCredential(credential))
        } else {
            completionHandler(.performDefaultHandling)
        }
    }

    /// The credential the rules give for `challenge`, or nil for default handling (see the
    /// extension's description).
    ///
    /// - Parameter readPassword: reads a credential's password (the environment and the file
    ///   system unless given).
    public func credential(
        answering challenge: AuthenticationChallenge,
        readPassword: (HostRule.Credential.PasswordSource) -> String? = { $0.readPassword() }
    ) -> Credential? {
        let space = challenge.protectionSpace
        guard space.authenticationMethod == .httpBasic || space.authenticationMethod == .httpDigest else { return nil }
        let rule = decisions.matcher.firstMatch(host: space.host, port: space.port)?.rule
        let refused = challenge.previousFailureCount > 0 ? challenge.proposedCredential : nil
        for configured in rule?.credentials ?? [] where configured.realm == nil || configured.realm == space.realm {
            guard let password = readPassword(configured.password) else { continue }
            let credential = Credential(
                user: configured.user,
                password: password,
                persistence: configured.persistence.sessionPersistence
            )
            if let refused, refused.user == credential.user, refused.password == credential.password { continue }
            return credential
        }
        return nil
    }
}

extension HostRule.Credential.PasswordSource {
    /// The password: the environment variable's value, or the file's first line (without its
    /// line ending); nil when unset, unreadable or empty.
    public func readPassword(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        switch self {
        case .environment(let name):
            guard let value = environment[name], !value.isEmpty else { return nil }
            return value
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            let text = String(decoding: data, as: UTF8.self)
            let line = text.prefix { $0 != "\n" && $0 != "\r" && $0 != "\r\n" }
            return line.isEmpty ? nil : String(line)
        }
    }
}

extension HostRule.Credential.Persistence {
    /// The session's persistence of the same name.
    public var sessionPersistence: Credential.Persistence {
        switch self {
        case .none: .none
        case .forSession: .forSession
        case .permanent: .permanent
        }
    }
}
