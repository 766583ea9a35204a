import Foundation
import Testing
import TollgateTLS

@Suite("Pin checks")
struct PinCheckTests {
    @Test("a pin on any certificate of the verified chain matches")
    func anyCertificateMatches() throws {
        let root = try CertificateAuthority.create(commonName: "Pinned Root")
        let intermediate = try root.issueIntermediate(commonName: "Pinned Intermediate")
        let identity = try intermediate.issueLeaf(for: "pinned.example")
        let chain = try ChainVerifier(trustedCertificates: [root.certificate])
            .verify(chain: identity.certificateChain, host: "pinned.example")
        for certificate in chain {
            #expect(ChainVerifier.pinMatch(chain: chain, pins: [certificate.spkiPin]))
        }
        let unrelated = try PrivateKey().spkiPin
        #expect(!ChainVerifier.pinMatch(chain: chain, pins: [unrelated]))
        #expect(ChainVerifier.pinMatch(chain: chain, pins: [unrelated, root.certificate.spkiPin]))
        #expect(!ChainVerifier.pinMatch(chain: chain, pins: []))
        try ChainVerifier.checkPins(chain: chain, pins: [identity.certificate.spkiPin], host: "pinned.example")
    }

    @Test("a pin mismatch lists the expected pins and each presented pin with its subject")
    func mismatchDescription() throws {
        let ca = try CertificateAuthority.create(commonName: "ca")
        let leaf = try ca.issueLeaf(for: "leaf").certificate
        let chain = [leaf, ca.certificate]
        let expectedA = try SPKIPin("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        let expectedB = try SPKIPin("sha256/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=")
        let error = #expect(throws: PinMismatchError.self) {
            try ChainVerifier.checkPins(chain: chain, pins: [expectedA, expectedB], host: "leaf")
        }
        let expected =
            "pin mismatch for leaf: expected \(expectedA), \(expectedB); "
            + "presented: \(leaf.spkiPin) CN=leaf, \(ca.certificate.spkiPin) CN=ca"
        #expect(error?.description == expected)
        #expect(error?.presentedChain == chain)
    }
}
