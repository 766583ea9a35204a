import Foundation
import NIOConcurrencyHelpers
import TollgateStore

/// Permanent credentials in an LMDB environment (directory 0700, files 0600): the part of a
/// ``CredentialStorage`` that survives a restart.
///
/// Layout: database `credentials`, key `SPACE NUL USER`, value the credential as JSON (user and
/// password, or a client identity's file paths); database `defaults`, key `SPACE`, value the
/// default user. `SPACE` is `protocol://host:port NUL method NUL =realm` (`*` for any realm).
/// Passwords are stored as given — the file modes are their protection, as for an SSH key.
///
/// Reads go to LMDB (memory-mapped, cheap), so a change made by another process — `tollgate
/// credentials set` while the proxy runs — is seen at once. Writes go through one
/// `StoreWriter` and do not block the caller; until they commit, this process reads its own
/// writes from a pending overlay. ``flush()`` waits for them.
///
/// One instance per directory per process: ``open(directory:)`` returns the open one.
public final class CredentialStore: Sendable {
    /// The environment's directory.
    public let directory: String
    private let environment: PrivateEnvironment
    private let credentialsDatabase: Database
    private let defaultsDatabase: Database
    private let pending = NIOLockedValueBox(Pending())

    private struct Pending {
        enum Change {
            case put([UInt8])
            case delete
        }

        var credentials: [String: (change: Change, sequence: Int)] = [:]
        var defaults: [String: (change: Change, sequence: Int)] = [:]
        var sequence = 0
    }

    private init(directory: String) throws {
        self.directory = directory
        environment = try PrivateEnvironment(path: directory)
        credentialsDatabase = try environment.environment.openDatabase(named: "credentials")
        defaultsDatabase = try environment.environment.openDatabase(named: "defaults")
    }

    /// The store in `directory` (created if missing), shared by every caller in this process.
    public static func open(directory: String) throws -> CredentialStore {
        try OpenStores.shared(directory) { try CredentialStore(directory: $0) }
    }

    /// Waits until every write so far is on disk. Not from an event loop.
    public func flush() { environment.flush() }

    /// Writes what is pending and closes the environment; ``open(directory:)`` opens it anew.
    public func close() {
        OpenStores.forget(directory)
        environment.close()
    }

    // MARK: reading

    /// The credentials stored for exactly `space`, by user.
    public func credentials(for space: ProtectionSpace) -> [String: Credential] {
        let prefix = space.storageKey + "\u{0}"
        var found: [String: [UInt8]] = [:]
        try? environment.environment.read { txn in
            try txn.forEach(in: credentialsDatabase, prefix: prefix) { (key: String, value: [UInt8]) in
                found[String(key.dropFirst(prefix.count))] = value
                return true
            }
        }
        pending.withLockedValue { pending in
            for (key, entry) in pending.credentials where key.hasPrefix(prefix) {
                let user = String(key.dropFirst(prefix.count))
                switch entry.change {
                case .put(let bytes): found[user] = bytes
                case .delete: found[user] = nil
                }
            }
        }
        return found.compactMapValues(Self.decode)
    }

    /// The default credential of exactly `space`, if one is set and stored.
    public func defaultCredential(for space: ProtectionSpace) -> Credential? {
        guard let user = defaultUser(for: space) else { return nil }
        return credentials(for: space)[user]
    }

    /// The user of the default credential of `space`.
    public func defaultUser(for space: ProtectionSpace) -> String? {
        let key = space.storageKey
        if let entry = pending.withLockedValue({ $0.defaults[key] }) {
            if case .put(let bytes) = entry.change { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
        return try? environment.environment.read { try $0.get(key, as: String.self, in: defaultsDatabase) }
    }

    /// Every stored credential, by space and user.
    public var allCredentials: [ProtectionSpace: [String: Credential]] {
        var raw: [String: [UInt8]] = [:]
        try? environment.environment.read { txn in
            try txn.forEach(in: credentialsDatabase) { (key: String, value: [UInt8]) in
                raw[key] = value
                return true
            }
        }
        pending.withLockedValue { pending in
            for (key, entry) in pending.credentials {
                switch entry.change {
                case .put(let bytes): raw[key] = bytes
                case .delete: raw[key] = nil
                }
            }
        }
        var result: [ProtectionSpace: [String: Credential]] = [:]
        for (key, value) in raw {
            guard let separator = key.lastIndex(of: "\u{0}"),
                let space = ProtectionSpace(storageKey: String(key[..<separator])),
                let credential = Self.decode(value)
            else { continue }
            result[space, default: [:]][String(key[key.index(after: separator)...])] = credential
        }
        return result
    }

    // MARK: writing

    /// Stores `credential` (as permanent) for `space`, replacing the one of the same user; it
    /// becomes the space's default when `asDefault` or when the space has none.
    public func set(_ credential: Credential, for space: ProtectionSpace, asDefault: Bool = false) {
        guard let bytes = try? JSONEncoder().encode(StoredCredential(credential)) else { return }
        let key = space.storageKey + "\u{0}" + credential.storageUser
        change(defaults: false, key: key, to: .put(Array(bytes)), database: credentialsDatabase)
        if asDefault || defaultUser(for: space) == nil {
            change(
                defaults: true,
                key: space.storageKey,
                to: .put(Array(credential.storageUser.utf8)),
                database: defaultsDatabase
            )
        }
    }

    /// Removes the credential of `user` for `space` (and the default, if it was that one).
    public func remove(user: String, for space: ProtectionSpace) {
        change(defaults: false, key: space.storageKey + "\u{0}" + user, to: .delete, database: credentialsDatabase)
        if defaultUser(for: space) == user {
            change(defaults: true, key: space.storageKey, to: .delete, database: defaultsDatabase)
        }
    }

    /// Removes every stored credential.
    public func removeAll() {
        for (space, credentials) in allCredentials {
            for user in credentials.keys { remove(user: user, for: space) }
        }
    }

    private func change(defaults isDefault: Bool, key: String, to change: Pending.Change, database: Database) {
        let sequence = pending.withLockedValue { pending -> Int in
            pending.sequence += 1
            if isDefault {
                pending.defaults[key] = (change, pending.sequence)
            } else {
                pending.credentials[key] = (change, pending.sequence)
            }
            return pending.sequence
        }
        let settled = pending
        environment.writer.submit(
            { txn in
                switch change {
                case .put(let bytes): try txn.put(key, bytes, in: database)
                case .delete: _ = try txn.delete(key, in: database)
                }
            },
            completion: { _ in
                settled.withLockedValue { pending in
                    if isDefault {
                        if pending.defaults[key]?.sequence == sequence { pending.defaults[key] = nil }
                    } else if pending.credentials[key]?.sequence == sequence {
                        pending.credentials[key] = nil
                    }
                }
            }
        )
    }

    private static func decode(_ bytes: [UInt8]) -> Credential? {
        (try? JSONDecoder().decode(StoredCredential.self, from: Data(bytes)))?.credential(persistence: .permanent)
    }
}
