import Foundation
import Testing
import TollgateCache

@testable import TollgateSession

@Suite("Digest computation and WWW-Authenticate parsing", .timeLimit(.minutes(1)))
struct DigestComputationTests {
    @Test("MD5 matches RFC 1321's test suite")
    func md5Vectors() {
        let vectors = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"
            ),
        ]
        for (input, digest) in vectors {
            #expect(SHA256.hex(MD5.hash(Array(input.utf8))) == digest, "MD5(\"\(input)\")")
        }
        // Lengths around the 56-byte padding boundary.
        #expect(
            SHA256.hex(MD5.hash(Array(repeating: UInt8(ascii: "a"), count: 56))) == "3b0c8ac703f828b04c6c197006d17218"
        )
        #expect(
            SHA256.hex(MD5.hash(Array(repeating: UInt8(ascii: "a"), count: 64))) == "014842d480b571495a4a0363793f7367"
        )
    }

    static let rfc7616Challenge = """
        Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=ALGORITHM, \
        nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
        """

    @Test(
        "The Authorization of RFC 7616 §3.9.1's example, for MD5 and SHA-256",
        arguments: [
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
            ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        ]
    )
    func rfc7616Example(algorithm: String, response: String) throws {
        let header = Self.rfc7616Challenge.replacingOccurrences(of: "ALGORITHM", with: algorithm)
        let parsed = try #require(AuthenticationHeader.challenges(in: [header]).first)
        let challenge = try #require(DigestChallenge(parsed))
        #expect(challenge.qop == "auth")
        let authorization = challenge.authorization(
            user: "Mufasa",
            password: "Circle of Life",
            method: "GET",
            uri: "/dir/index.html",
            nonceCount: 1,
            cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
        )
        let fields = try #require(AuthenticationHeader.challenges(in: [authorization]).first)
        #expect(fields.schemeName == "digest")
        #expect(fields.parameters["response"] == response)
        #expect(fields.parameters["username"] == "Mufasa")
        #expect(fields.parameters["uri"] == "/dir/index.html")
        #expect(fields.parameters["nc"] == "00000001")
        #expect(fields.parameters["qop"] == "auth")
        #expect(fields.parameters["algorithm"] == algorithm)
        #expect(fields.parameters["opaque"] == "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS")
        #expect(authorization.contains("nc=00000001"))  // nc and qop are tokens, not quoted
        #expect(!authorization.contains("Circle of Life"))
    }

    @Test("userhash sends H(user:realm); nonce counts are 8 hex digits; -sess hashes the nonces into HA1")
    func userhashAndSession() throws {
        let parsed = try #require(
            AuthenticationHeader.challenges(in: [
                #"Digest realm="r", nonce="n", algorithm=SHA-256-sess, qop=auth, userhash=true"#
            ]).first
        )
        let challenge = try #require(DigestChallenge(parsed))
        let value = challenge.authorization(
            user: "bob",
            password: "pw",
            method: "GET",
            uri: "/",
            nonceCount: 26,
            cnonce: "c"
        )
        let fields = try #require(AuthenticationHeader.challenges(in: [value]).first?.parameters)
        #expect(fields["username"] == SHA256.hex(SHA256.hash(Array("bob:r".utf8))))
        #expect(fields["userhash"] == "true")
        #expect(fields["nc"] == "0000001a")
        let sha: (String) -> String = { SHA256.hex(SHA256.hash(Array($0.utf8))) }
        let ha1 = sha(sha("bob:r:pw") + ":n:c")
        #expect(fields["response"] == sha("\(ha1):n:0000001a:c:auth:\(sha("GET:/"))"))
    }

    @Test("Challenges the session cannot answer are skipped: auth-int only, unknown algorithms, no nonce")
    func unanswerable() {
        let values = [
            #"Digest realm="a", nonce="1", qop="auth-int""#,
            #"Digest realm="b", nonce="2", algorithm=SHA-512-256"#,
            #"Digest realm="c""#,
            #"Negotiate"#,
        ]
        #expect(AnswerableChallenge.from(values).isEmpty)
    }

    @Test("Several challenges in one field and across fields; Digest SHA-256 first, then MD5, then Basic")
    func challengeOrder() {
        let values = [
            #"Basic realm="plain", Digest realm="d", nonce="x", algorithm=MD5, qop="auth""#,
            #"Digest realm="d", nonce="y", algorithm=SHA-256, qop="auth,auth-int", Negotiate abc=="#,
        ]
        let parsed = AuthenticationHeader.challenges(in: values)
        #expect(parsed.map(\.schemeName) == ["basic", "digest", "digest", "negotiate"])
        #expect(parsed[3].token68 == "abc==")
        #expect(parsed[0].realm == "plain")
        let ordered = AnswerableChallenge.from(values)
        #expect(ordered.map(\.method) == [.httpDigest, .httpDigest, .httpBasic])
        #expect(ordered.first?.digest?.algorithm == .sha256)
        #expect(ordered.first?.digest?.nonce == "y")
        #expect(ordered.last?.realm == "plain")
    }

    @Test("Quoted strings keep commas and escaped quotes; a Basic challenge without realm has realm \"\"")
    func quotedStrings() {
        let parsed = AuthenticationHeader.challenges(in: [#"Basic realm="a, \"b\" \\ c", charset="UTF-8""#, "Basic"])
        #expect(parsed.count == 2)
        #expect(parsed[0].realm == #"a, "b" \ c"#)
        #expect(parsed[0].parameters["charset"] == "UTF-8")
        #expect(BasicChallenge.realm(in: ["Basic"]) == "")
        #expect(BasicChallenge.realm(in: [#"Digest realm="x", nonce="y""#]) == nil)
        #expect(AuthenticationHeader.quoted(#"a"b\c"#) == #""a\"b\\c""#)
    }
}
