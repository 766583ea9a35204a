/// A task's part in HTTP authentication (kept in its engine, touched on its event loop).
struct TaskAuthentication {
    /// A credential the session put on the current request.
    struct Attempt {
        var space: ProtectionSpace
        var credential: Credential
        /// Sent before any challenge (a space that authenticated earlier in the session).
        var preemptive: Bool
        /// The Digest challenge it answered (nil for Basic).
        var digest: DigestChallenge?
    }

    /// The credential on the current request, until its response says whether it worked.
    var current: Attempt?
    /// The exact `Authorization` value the session added to the current request; nil when the
    /// request carries none or the client's own.
    var addedAuthorization: String?
    /// Credentials the server refused in this task, per space: never sent again by this task.
    var rejected: [ProtectionSpace: [Credential]] = [:]
    /// Digest retries after `stale=true` (bounded, so a server that always says stale ends).
    var staleRetries = 0
    /// Uses of each Digest nonce (the `nc` parameter).
    var nonceCounts: [String: Int] = [:]

    static let maximumStaleRetries = 2

    func isRejected(_ credential: Credential, in space: ProtectionSpace) -> Bool {
        rejected[space.normalized]?.contains { $0.user == credential.user && $0.password == credential.password }
            ?? false
    }

    mutating func reject(_ attempt: Attempt) {
        guard !isRejected(attempt.credential, in: attempt.space) else { return }
        rejected[attempt.space.normalized, default: []].append(attempt.credential)
    }

    func failureCount(for space: ProtectionSpace) -> Int {
        rejected[space.normalized]?.count ?? 0
    }
}
