import Foundation
import Testing
import TollgateHTTP

@testable import TollgateSession

@Suite("Protection spaces and the credential storage", .timeLimit(.minutes(1)))
struct ProtectionSpaceMatchingTests {
    static func space(
        _ host: String = "api.example.com",
        port: Int = 443,
        protocol scheme: String = "https",
        realm: String? = "R",
        method: ProtectionSpace.AuthenticationMethod = .httpBasic
    ) -> ProtectionSpace {
        ProtectionSpace(host: host, port: port, protocol: scheme, realm: realm, authenticationMethod: method)
    }

    static let alice = Credential(user: "alice", password: "a-secret", persistence: .forSession)
    static let bob = Credential(user: "bob", password: "b-secret", persistence: .forSession)

    @Test("A space's storage key names all five parts and reads back; realm nil and \"\" differ")
    func storageKeys() {
        let spaces = [
            Self.space(), Self.space(realm: nil), Self.space(realm: ""), Self.space(method: .httpDigest),
            Self.space(port: 8443), Self.space(protocol: "http"), Self.space("[::1]", realm: "a\u{1}b"),
        ]
        #expect(Set(spaces.map(\.storageKey)).count == spaces.count)
        for space in spaces { #expect(ProtectionSpace(storageKey: space.storageKey) == space) }
        #expect(Self.space("API.Example.COM").storageKey == Self.space().storageKey)
    }

    @Test("Lookup: exact space, then any realm; Digest falls back to Basic, Basic never to Digest")
    func lookupOrder() {
        #expect(Self.space().lookupOrder == [Self.space(), Self.space(realm: nil)])
        #expect(
            Self.space(method: .httpDigest).lookupOrder == [
                Self.space(method: .httpDigest), Self.space(realm: nil, method: .httpDigest), Self.space(),
                Self.space(realm: nil),
            ]
        )
        let storage = CredentialStorage()
        storage.set(Self.alice, for: Self.space(method: .httpDigest))
        #expect(storage.credential(answering: Self.space(method: .httpDigest)) == Self.alice)
        #expect(storage.credential(answering: Self.space()) == nil)  // stored for Digest: never sent in clear
        storage.set(Self.bob, for: Self.space(realm: nil))
        #expect(storage.credential(answering: Self.space(realm: "Other")) == Self.bob)
        #expect(storage.credential(answering: Self.space(realm: "Other", method: .httpDigest)) == Self.bob)
    }

    @Test("Matching is exact on host (case-insensitive), port, protocol and realm")
    func exactMatching() {
        let storage = CredentialStorage()
        storage.set(Self.alice, for: Self.space())
        #expect(storage.credential(answering: Self.space("API.EXAMPLE.com")) == Self.alice)
        #expect(storage.credential(answering: Self.space(port: 8443)) == nil)
        #expect(storage.credential(answering: Self.space(protocol: "http")) == nil)
        #expect(storage.credential(answering: Self.space("other.example.com")) == nil)
        #expect(storage.credential(answering: Self.space(realm: "R2")) == nil)
        #expect(storage.credential(answering: Self.space("evil-api.example.com")) == nil)
    }

    @Test("The first credential of a space is its default; setDefaultCredential changes it; remove forgets it")
    func defaults() {
        let storage = CredentialStorage()
        storage.set(Self.alice, for: Self.space())
        storage.set(Self.bob, for: Self.space())
        #expect(storage.credentials(for: Self.space()).keys.sorted() == ["alice", "bob"])
        #expect(storage.defaultCredential(for: Self.space()) == Self.alice)
        storage.setDefaultCredential(Self.bob, for: Self.space())
        #expect(storage.defaultCredential(for: Self.space()) == Self.bob)
        storage.remove(Self.bob, for: Self.space())
        #expect(storage.defaultCredential(for: Self.space()) == nil)
        // With no default, the space's only credential still answers.
        #expect(storage.credential(answering: Self.space()) == Self.alice)
    }

    @Test("Persistence none is never stored; without a store, permanent stays in this storage's memory")
    func persistenceInMemory() {
        let storage = CredentialStorage()
        storage.set(Credential(user: "x", password: "y", persistence: .none), for: Self.space())
        #expect(storage.allCredentials.isEmpty)
        let permanent = Credential(user: "p", password: "q", persistence: .permanent)
        storage.set(permanent, for: Self.space())
        #expect(storage.store == nil)
        #expect(storage.defaultCredential(for: Self.space()) == permanent)
        #expect(CredentialStorage().allCredentials.isEmpty)
        storage.removeSessionCredentials()
        #expect(storage.allCredentials.isEmpty)
    }

    @Test("Descriptions mask passwords")
    func masked() {
        let credential = Credential(user: "alice", password: "hunter2", persistence: .permanent)
        #expect(!"\(credential)".contains("hunter2"))
        #expect("\(credential)".contains("alice"))
    }

    @Test("Preemptive scopes: the directory of the authenticated path, longest match, same origin only")
    func preemptiveScopes() {
        let storage = CredentialStorage()
        let url = HTTPURL(string: "https://api.example.com/docs/a/page.html")!
        storage.rememberAuthenticated(Self.alice, in: Self.space(), url: url)
        #expect(CredentialStorage.directory(of: "/docs/a/page.html") == "/docs/a/")
        #expect(CredentialStorage.directory(of: "/") == "/")
        #expect(
            storage.preemptiveCredential(for: HTTPURL(string: "https://api.example.com/docs/a/b/c")!)?.credential
                == Self.alice
        )
        #expect(storage.preemptiveCredential(for: HTTPURL(string: "https://api.example.com/docs/b")!) == nil)
        #expect(storage.preemptiveCredential(for: HTTPURL(string: "http://api.example.com/docs/a/x")!) == nil)
        #expect(storage.preemptiveCredential(for: HTTPURL(string: "https://api.example.com:8443/docs/a/x")!) == nil)
        storage.rememberAuthenticated(
            Self.bob,
            in: Self.space(realm: "Root"),
            url: HTTPURL(string: "https://api.example.com/x")!
        )
        #expect(
            storage.preemptiveCredential(for: HTTPURL(string: "https://api.example.com/docs/a/x")!)?.credential
                == Self.alice
        )
        #expect(
            storage.preemptiveCredential(for: HTTPURL(string: "https://api.example.com/docs/b")!)?.credential
                == Self.bob
        )
        // Digest and persistence none are never sent preemptively.
        let other = CredentialStorage()
        other.rememberAuthenticated(Self.alice, in: Self.space(method: .httpDigest), url: url)
        other.rememberAuthenticated(
            Credential(user: "n", password: "n", persistence: .none),
            in: Self.space(),
            url: url
        )
        #expect(other.preemptiveCredential(for: url) == nil)
        storage.forgetAuthenticated(in: Self.space())
        #expect(storage.preemptiveCredential(for: url)?.credential == Self.bob)
    }
}
