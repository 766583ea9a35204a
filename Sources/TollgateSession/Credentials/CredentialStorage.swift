import NIOConcurrencyHelpers
import TollgateHTTP

/// Credentials by protection space, in the model of `URLCredentialStorage`: each space holds
/// credentials by user and may name one as its default.
///
/// Where a credential is kept follows its ``Credential/Persistence``:
/// - `none`: not stored at all (it answered one challenge);
/// - `forSession`: in this storage's memory, gone with it;
/// - `permanent`: in the ``CredentialStore`` (LMDB) when this storage has one, else in memory
///   (an ephemeral session's storage writes nothing to disk).
///
/// It also remembers, in memory, which spaces a Basic credential has authenticated and under
/// which paths (RFC 7617 §2.2), so the session sends that credential preemptively to requests
/// at or below those paths. Each session of the proxy gets its own storage (its own memory),
/// sharing one ``CredentialStore`` for permanent credentials.
///
/// Thread-safe. Passwords never appear in `description`s (``Credential`` masks them).
public final class CredentialStorage: Sendable {
    /// Where permanent credentials go; nil: memory only.
    public let store: CredentialStore?
    private let memory = NIOLockedValueBox(Memory())

    private struct Memory {
        var credentials: [ProtectionSpace: [String: Credential]] = [:]
        var defaults: [ProtectionSpace: String] = [:]
        var preemptive: [PreemptiveScope] = []
    }

    /// A Basic credential that authenticated requests to an origin under a path prefix.
    private struct PreemptiveScope {
        var origin: String
        var pathPrefix: String
        var space: ProtectionSpace
        var credential: Credential
    }

    /// A storage keeping permanent credentials in `store`, or in memory when nil.
    public init(store: CredentialStore? = nil) {
        self.store = store
    }

    /// A storage keeping permanent credentials in the LMDB environment in `directory`.
    public convenience init(directory: String) throws {
        self.init(store: try CredentialStore.open(directory: directory))
    }

    // MARK: reading

    /// The credentials for exactly `space` (host compared case-insensitively), by user.
    public func credentials(for space: ProtectionSpace) -> [String: Credential] {
        let space = space.normalized
        var result = store?.credentials(for: space) ?? [:]
        for (user, credential) in memory.withLockedValue({ $0.credentials[space] ?? [:] }) { result[user] = credential }
        return result
    }

    /// Every credential, by space and user.
    public var allCredentials: [ProtectionSpace: [String: Credential]] {
        var result = store?.allCredentials ?? [:]
        for (space, credentials) in memory.withLockedValue({ $0.credentials }) {
            for (user, credential) in credentials { result[space, default: [:]][user] = credential }
        }
        return result
    }

    /// The default credential of exactly `space`.
    public func defaultCredential(for space: ProtectionSpace) -> Credential? {
        let space = space.normalized
        let (user, credential) = memory.withLockedValue { memory -> (String?, Credential?) in
            guard let user = memory.defaults[space] else { return (nil, nil) }
            return (user, memory.credentials[space]?[user])
        }
        if let credential { return credential }
        if let user, let stored = store?.credentials(for: space)[user] { return stored }
        return store?.defaultCredential(for: space)
    }

    /// The credential that answers a challenge for `space`: the default credential of the first
    /// of ``ProtectionSpace/lookupOrder`` that has one (this space; any realm of the server; for
    /// Digest, the same for Basic), or that space's only credential.
    public func credential(answering space: ProtectionSpace) -> Credential? {
        for candidate in space.lookupOrder {
            if let credential = defaultCredential(for: candidate) { return credential }
            let all = credentials(for: candidate)
            if all.count == 1, let only = all.first?.value { return only }
        }
        return nil
    }

    // MARK: writing

    /// Stores `credential` for `space` as its persistence says (`none`: not at all). It becomes
    /// the space's default when the space has none.
    public func set(_ credential: Credential, for space: ProtectionSpace) {
        keep(credential, for: space, asDefault: false)
    }

    /// Stores `credential` for `space` and makes it the space's default.
    public func setDefaultCredential(_ credential: Credential, for space: ProtectionSpace) {
        keep(credential, for: space, asDefault: true)
    }

    private func keep(_ credential: Credential, for space: ProtectionSpace, asDefault: Bool) {
        let space = space.normalized
        let user = credential.storageUser
        switch credential.persistence {
        case .none:
            return
        case .permanent where store != nil:
            store?.set(credential, for: space, asDefault: asDefault)
            memory.withLockedValue { memory in
                memory.credentials[space]?[user] = nil
                if memory.defaults[space] == user || asDefault { memory.defaults[space] = nil }
            }
        case .forSession, .permanent:
            memory.withLockedValue { memory in
                memory.credentials[space, default: [:]][user] = credential
                if asDefault || memory.defaults[space] == nil { memory.defaults[space] = user }
            }
        }
    }

    /// Removes `credential` (by user) from `space`, in memory and in the store; it is no longer
    /// sent preemptively.
    public func remove(_ credential: Credential, for space: ProtectionSpace) {
        let space = space.normalized
        let user = credential.storageUser
        memory.withLockedValue { memory in
            memory.credentials[space]?[user] = nil
            if memory.credentials[space]?.isEmpty == true { memory.credentials[space] = nil }
            if memory.defaults[space] == user { memory.defaults[space] = nil }
            memory.preemptive.removeAll { $0.space == space && $0.credential.storageUser == user }
        }
        store?.remove(user: user, for: space)
    }

    /// Forgets the credentials kept in memory (session ones, and permanent ones of a storage
    /// without a store) and every preemptive scope; the store is not touched.
    public func removeSessionCredentials() {
        memory.withLockedValue { $0 = Memory() }
    }

    /// Forgets every credential: in memory, in the store, and every preemptive scope
    /// (``Session/reset()``).
    public func removeAll() {
        memory.withLockedValue { $0 = Memory() }
        store?.removeAll()
    }

    /// Waits until permanent credentials set so far are on disk (not from an event loop).
    public func flush() { store?.flush() }

    // MARK: preemptive Basic

    /// Notes that `credential` (Basic) authenticated a request to `url` in `space`: later requests
    /// to the same origin at or below the URL's directory send it without waiting for a 401.
    func rememberAuthenticated(_ credential: Credential, in space: ProtectionSpace, url: HTTPURL) {
        guard space.authenticationMethod == .httpBasic, credential.persistence != .none, credential.user != nil else {
            return
        }
        let scope = PreemptiveScope(
            origin: Self.origin(of: url),
            pathPrefix: Self.directory(of: url.path),
            space: space.normalized,
            credential: credential
        )
        memory.withLockedValue { memory in
            memory.preemptive.removeAll { $0.origin == scope.origin && $0.pathPrefix == scope.pathPrefix }
            memory.preemptive.append(scope)
        }
    }

    /// The Basic credential to send with a request to `url` before any challenge, if a space of
    /// its origin authenticated at or above its path (the longest such path wins).
    func preemptiveCredential(for url: HTTPURL) -> (space: ProtectionSpace, credential: Credential)? {
        // Asked for every request: with nothing to send, skip building the origin and path.
        if memory.withLockedValue({ $0.preemptive.isEmpty }) { return nil }
        let origin = Self.origin(of: url)
        let path = url.path
        return memory.withLockedValue { memory in
            memory.preemptive
                .filter { $0.origin == origin && path.hasPrefix($0.pathPrefix) }
                .max { $0.pathPrefix.count < $1.pathPrefix.count }
                .map { ($0.space, $0.credential) }
        }
    }

    /// Stops sending anything preemptively to `space` (its credential was refused).
    func forgetAuthenticated(in space: ProtectionSpace) {
        let space = space.normalized
        memory.withLockedValue { $0.preemptive.removeAll { $0.space == space } }
    }

    private static func origin(of url: HTTPURL) -> String {
        "\(url.scheme.lowercased())://\(url.host.lowercased()):\(url.effectivePort)"
    }

    /// The path up to and including its last `/` (RFC 7617 §2.2).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "/" }
        return String(path[...slash])
    }
}
