import Foundation
import NIOCore
import Testing
import TollgateTLS

@Suite("TLSContext and TLSContextCache")
struct TLSContextCacheTests {
    @Test("equal configurations share one context; a different trust policy gets its own")
    func sharing() throws {
        let cache = TLSContextCache()
        let ca = try CertificateAuthority.create(commonName: "Cache CA")
        var first = TLSConfiguration.makeClientConfiguration()
        first.trustRoots = .certificates([ca.certificate])
        var same = TLSConfiguration.makeClientConfiguration()
        same.trustRoots = .certificates([try Certificate(pem: ca.certificate.pemString)])
        var pinned = first
        pinned.deferTrustDecision = true

        let a = try cache.context(for: first)
        #expect(try cache.context(for: same) === a)
        #expect(try cache.context(for: pinned) !== a)
        #expect(try cache.context(for: .makeClientConfiguration()) !== a)
        #expect(cache.count == 3)
    }

    @Test("the least recently used context is dropped past the capacity")
    func capacity() throws {
        let cache = TLSContextCache(capacity: 2)
        var configurations: [TLSConfiguration] = []
        for index in 0..<3 {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .empty
            configuration.applicationProtocols = ["proto-\(index)"]
            configurations.append(configuration)
        }
        let zero = try cache.context(for: configurations[0])
        _ = try cache.context(for: configurations[1])
        #expect(try cache.context(for: configurations[0]) === zero)  // now the most recent
        _ = try cache.context(for: configurations[2])  // drops [1]
        #expect(cache.count == 2)
        #expect(try cache.context(for: configurations[0]) === zero)
    }

    @Test("a configuration with a server-name handler is never shared")
    func closuresAreNotCached() throws {
        let cache = TLSContextCache()
        var configuration = TLSConfiguration.makeServerConfiguration(identity: nil)
        configuration.serverNameHandler = { _ in nil }
        #expect(try cache.context(for: configuration) !== cache.context(for: configuration))
        #expect(cache.count == 0)
    }

    @Test("impossible configurations are refused with invalidConfiguration")
    func invalidConfigurations() throws {
        var longALPN = TLSConfiguration.makeClientConfiguration()
        longALPN.applicationProtocols = [String(repeating: "x", count: 256)]
        #expect(throws: TLSError.invalidConfiguration) { try TLSContext(configuration: longALPN) }

        var inverted = TLSConfiguration.makeClientConfiguration()
        inverted.minimumVersion = .tlsv1_3
        inverted.maximumVersion = .tlsv1_2
        #expect(throws: TLSError.invalidConfiguration) { try TLSContext(configuration: inverted) }

        let client = try TLSContext(configuration: .makeClientConfiguration())
        #expect(throws: TLSError.invalidConfiguration) {
            try TLSHandler.makeClientHandler(context: client, serverHostname: nil)
        }
        var noHostCheck = TLSConfiguration.makeClientConfiguration()
        noHostCheck.certificateVerification = .noHostnameVerification
        _ = try TLSHandler.makeClientHandler(context: try TLSContext(configuration: noHostCheck), serverHostname: nil)

        let serverWithoutIdentity = try TLSContext(configuration: .makeServerConfiguration(identity: nil))
        #expect(throws: TLSError.invalidConfiguration) {
            try TLSHandler.makeServerHandler(context: serverWithoutIdentity)
        }
    }

    @Test("an identity whose key does not match its certificate is refused")
    func mismatchedIdentity() throws {
        let ca = try CertificateAuthority.create(commonName: "Mismatch CA")
        let leaf = try ca.issueLeaf(for: "a.example")
        let other = try ca.issueLeaf(for: "b.example")
        #expect(throws: OpenSSLError.invalidArgument) {
            try Identity(certificateChain: leaf.certificateChain, privateKey: other.privateKey)
        }
    }
}
