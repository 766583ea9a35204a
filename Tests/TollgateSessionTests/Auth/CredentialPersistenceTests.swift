import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

#if canImport(Glibc)
import Glibc
#endif

@Suite("Permanent credentials in LMDB, session ones in memory; secrets out of the cache", .timeLimit(.minutes(1)))
struct CredentialPersistenceTests {
    static func space(port: Int, method: ProtectionSpace.AuthenticationMethod = .httpDigest) -> ProtectionSpace {
        ProtectionSpace(
            host: "127.0.0.1",
            port: port,
            protocol: "http",
            realm: "Restricted",
            authenticationMethod: method
        )
    }

    @Test("A permanent credential that worked survives a restart; a session one does not")
    func permanentSurvivesRestart() async throws {
        let directory = AuthFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await AuthOrigin.start()
        defer { server.stop() }
        let permanent = Credential(user: "alice", password: "secret", persistence: .permanent)
        do {
            var configuration = SessionConfiguration.default
            configuration.credentialStorage = try CredentialStorage(directory: directory)
            let answerer = ChallengeAnswerer { _ in .useCredential(permanent) }
            let (_, response) = try await Session(configuration: configuration, delegate: answerer).data(
                for: Request(url: server.url())
            )
            #expect(response.status == 200)
            // A session credential for another space, in the same storage.
            configuration.credentialStorage?.set(
                Credential(user: "carol", password: "temporary", persistence: .forSession),
                for: Self.space(port: 1)
            )
            #expect(configuration.credentialStorage?.credentials(for: Self.space(port: 1)).count == 1)
            configuration.credentialStorage?.store?.close()
        }
        // "Restart": a new storage on the same directory.
        let reopened = try CredentialStorage(directory: directory)
        defer { reopened.store?.close() }
        #expect(reopened.defaultCredential(for: Self.space(port: server.origin.port)) == permanent)
        #expect(reopened.credentials(for: Self.space(port: 1)).isEmpty)
        // And it answers by default handling, with no delegate at all.
        var configuration = SessionConfiguration.default
        configuration.credentialStorage = reopened
        let (_, response) = try await Session(configuration: configuration).data(for: Request(url: server.url()))
        #expect(response.status == 200)
        #expect(server.log.suffix(2) == ["challenge", "ok digest MD5"])
    }

    @Test("The store's directory is 0700 and its files 0600, also when they existed with looser modes")
    func fileModes() throws {
        let parent = AuthFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let directory = parent + "/credentials"
        let previous = umask(0o002)
        defer { umask(previous) }
        let store = try CredentialStore.open(directory: directory)
        store.set(Credential(user: "u", password: "p", persistence: .permanent), for: Self.space(port: 9))
        store.close()
        #expect(AuthFixture.mode(directory) == 0o700)
        #expect(AuthFixture.mode(directory + "/data.mdb") == 0o600)
        #expect(AuthFixture.mode(directory + "/lock.mdb") == 0o600)
        chmod(directory, 0o755)
        chmod(directory + "/data.mdb", 0o644)
        let again = try CredentialStore.open(directory: directory)
        again.close()
        #expect(AuthFixture.mode(directory) == 0o700)
        #expect(AuthFixture.mode(directory + "/data.mdb") == 0o600)
    }

    @Test("A store reads its own pending writes, and another opener of the directory gets the same instance")
    func readYourWrites() throws {
        let directory = AuthFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try CredentialStore.open(directory: directory)
        defer { store.close() }
        #expect(try CredentialStore.open(directory: directory + "/.") === store)
        let credential = Credential(user: "u", password: "p", persistence: .permanent)
        store.set(credential, for: Self.space(port: 1))
        #expect(store.defaultCredential(for: Self.space(port: 1)) == credential)
        store.remove(user: "u", for: Self.space(port: 1))
        #expect(store.credentials(for: Self.space(port: 1)).isEmpty)
        store.set(credential, for: Self.space(port: 2))
        store.flush()
        #expect(store.allCredentials[Self.space(port: 2)]?["u"] == credential)
        #expect(store.allCredentials.count == 1)
    }

    /// An origin that asks for Basic and then answers with `headers`.
    static func basicOrigin(_ headers: HeaderFields) async throws -> AuthOrigin {
        var options = AuthOrigin.Options(digestAlgorithms: [], offerBasic: true)
        options.successHeaders = headers
        return try await AuthOrigin.start(options)
    }

    static func cacheFiles(_ directory: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? [] {
            bytes += (FileManager.default.contents(atPath: directory + "/" + path)).map(Array.init) ?? []
        }
        return bytes
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    @Test(
        "The session's Authorization never enters a shared cache entry: Vary: Authorization is not stored, private not, public stored without it",
        arguments: [
            ("public, max-age=60", "Authorization", false),
            ("max-age=60", "", false),
            ("public, max-age=60", "", true),
        ]
    )
    func authorizationStaysOutOfTheCache(cacheControl: String, vary: String, stored: Bool) async throws {
        var headers: HeaderFields = ["Cache-Control": cacheControl]
        if !vary.isEmpty { headers.add(name: "Vary", value: vary) }
        let server = try await Self.basicOrigin(headers)
        defer { server.stop() }
        let fixture = try CacheFixture(shared: true)
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = fixture.cache
        configuration.credentialStorage = CredentialStorage()
        let answerer = ChallengeAnswerer { _ in
            .useCredential(Credential(user: "alice", password: "secret", persistence: .forSession))
        }
        let session = Session(configuration: configuration, delegate: answerer)
        let task = try session.dataTask(with: Request(url: server.url()))
        let done = NIOLockedValueBoxFlag()
        task.delegate = CompletionFlag(done)
        task.resume()
        try await eventually("first task") { done.value }
        #expect(task.response?.status == 200)
        #expect((task.cacheOutcome?.stored ?? false) == stored, "\(String(describing: task.cacheOutcome))")
        if !stored, !vary.isEmpty { #expect(task.cacheOutcome?.detail == "authorization") }
        // Neither the token nor the password is in any file of the cache.
        fixture.cache.store.close()
        let files = Self.cacheFiles(fixture.directory)
        #expect(!files.isEmpty)
        let tokenLeaked = Self.contains(files, "YWxpY2U6c2VjcmV0")
        let passwordLeaked = Self.contains(files, "secret")
        #expect(!tokenLeaked, "the Basic token is in the cache's files")
        #expect(!passwordLeaked, "the password is in the cache's files")
    }
}

/// A thread-safe flag.
final class NIOLockedValueBoxFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var _value = false
    var value: Bool { lock.withLock { _value } }
    func set() { lock.withLock { _value = true } }
}

/// Sets a flag when the task completes.
final class CompletionFlag: TaskDelegate, @unchecked Sendable {
    let flag: NIOLockedValueBoxFlag
    init(_ flag: NIOLockedValueBoxFlag) { self.flag = flag }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) { flag.set() }
}
