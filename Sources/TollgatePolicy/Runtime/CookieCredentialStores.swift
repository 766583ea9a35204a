import Foundation
public import NIOCore
import NIOPosix
public import TollgateSession

/// The credential and cookie stores a ``PolicyRuntime``'s sessions get.
///
/// On disk, under one data directory (``defaultDirectory(environment:)``:
/// `$XDG_DATA_HOME/tollgate`, else `~/.local/share/tollgate`), each an LMDB environment with its
/// directory mode 0700 and files mode 0600:
/// - `credentials/`: permanent credentials (``CredentialStore``);
/// - `cookies/`: the cookies of `cookies: jar` sessions that have an expiry date
///   (``CookieStorage/persistent(directory:publicSuffixes:limits:)``).
///
/// Per session (``attach(to:settings:)``):
/// - every session gets its own ``CredentialStorage`` (session credentials and preemptive Basic
///   are per session), backed by the shared credential store — except `configuration:
///   ephemeral` sessions, which keep even permanent credentials in memory;
/// - a `cookies: jar` session gets the shared persistent cookie store (default and background
///   sessions) or a memory store of its own (ephemeral); a `cookies: passthrough` session gets
///   none: the client's Cookie and the origin's Set-Cookie pass untouched and nothing is kept.
///
/// Without a directory (``init(directory:)`` with nil) everything is in memory.
public final class CookieCredentialStores: Sendable {
    /// The data directory, nil for memory only.
    public let directory: String?
    /// The permanent credentials, nil for memory only.
    public let credentialStore: CredentialStore?
    /// The persistent cookie store of default and background jar sessions, nil for memory only.
    public let cookieStorage: CookieStorage?

    /// Opens (creating if missing) the stores under `directory`; nil keeps everything in memory.
    /// - Throws: when a store cannot be opened (a directory that cannot be created, …).
    public init(directory: String?) throws {
        self.directory = directory
        if let directory {
            credentialStore = try CredentialStore.open(directory: Self.credentialsDirectory(in: directory))
            cookieStorage = try CookieStorage.persistent(directory: Self.cookiesDirectory(in: directory))
        } else {
            credentialStore = nil
            cookieStorage = nil
        }
    }

    /// `$XDG_DATA_HOME/tollgate` when that is an absolute path, else `$HOME/.local/share/tollgate`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        DataDirectory.path(environment: environment)
    }

    /// Where permanent credentials live under a data directory.
    public static func credentialsDirectory(in directory: String) -> String { directory + "/credentials" }
    /// Where persistent cookies live under a data directory.
    public static func cookiesDirectory(in directory: String) -> String { directory + "/cookies" }

    /// Sets the session's credential storage and, for `cookies: jar`, its cookie storage (see the
    /// type's description).
    public func attach(to configuration: inout SessionConfiguration, settings: SessionSettings) {
        let ephemeral = configuration.kind.isEphemeral
        configuration.credentialStorage = CredentialStorage(store: ephemeral ? nil : credentialStore)
        switch settings.cookies {
        case .passthrough:
            configuration.cookieStorage = nil
        case .jar:
            configuration.cookieStorage = ephemeral ? CookieStorage() : (cookieStorage ?? CookieStorage())
        }
    }

    /// A session preparation that attaches these stores, then runs `next` (e.g. the cache's).
    public func preparation(then next: PolicyRuntime.SessionPreparation? = nil) -> PolicyRuntime.SessionPreparation {
        { [self] name, settings, configuration in
            attach(to: &configuration, settings: settings)
            next?(name, settings, &configuration)
        }
    }

    /// Writes what is pending to disk (not from an event loop).
    public func flush() {
        credentialStore?.flush()
        cookieStorage?.flush()
    }

    /// Writes what is pending and closes both LMDB environments (at shutdown, after the sessions).
    public func close() {
        credentialStore?.close()
        cookieStorage?.close()
    }
}

extension PolicyRuntime {
    /// A runtime whose sessions get `stores` (``CookieCredentialStores/attach(to:settings:)``), then
    /// `prepareSession`.
    public convenience init(
        configuration: PolicyConfiguration,
        sourceFile: String?,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        stores: CookieCredentialStores,
        prepareSession: PolicyRuntime.SessionPreparation? = nil
    ) {
        self.init(
            configuration: configuration,
            sourceFile: sourceFile,
            eventLoopGroup: eventLoopGroup,
            prepareSession: stores.preparation(then: prepareSession)
        )
    }
}
