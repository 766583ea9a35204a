// The WWW-Authenticate parser (AuthenticationHeader, RFC 9110 §11.6.1) and the Digest challenge
// reader (DigestChallenge, RFC 7616) fed an arbitrary field value.
//
// Invariants:
// - every challenge has a token scheme, lowercased token parameter names, and either
//   parameters or a token68;
// - a challenge without a token68, written back with its parameters quoted, parses to itself;
// - the Authorization value answering a Digest challenge parses as one Digest credential that
//   carries the server's realm, nonce and opaque unchanged (a value quoted wrongly would send the
//   origin something else, or smuggle in parameters), and a response of 32 or 64 hex digits.
import FuzzSupport
import TollgateHTTP

@testable import TollgateSession

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDigestChallenge(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let value = FuzzInput(start, count).text
    let challenges = AuthenticationHeader.challenges(in: [value])
    for challenge in challenges {
        fuzzCheck(FieldList.isToken(challenge.scheme), "scheme '\(challenge.scheme)' from '\(value)'")
        for name in challenge.parameters.keys {
            fuzzCheck(FieldList.isToken(name) && name == name.lowercased(), "parameter name '\(name)' from '\(value)'")
        }
        fuzzCheck(challenge.token68 == nil || challenge.parameters.isEmpty, "a token68 and parameters in one challenge")
        if challenge.token68 == nil {
            let written =
                ([challenge.scheme]
                + [
                    challenge.parameters.sorted { $0.key < $1.key }
                        .map { "\($0.key)=\(AuthenticationHeader.quoted($0.value))" }.joined(separator: ", ")
                ].filter { !$0.isEmpty }).joined(separator: " ")
            let again = AuthenticationHeader.challenges(in: [written])
            fuzzCheck(again == [challenge], "'\(value)' → '\(written)' → \(again)")
        }
    }
    // A field value as it arrives never holds CR, LF or NUL (the response decoder refuses them).
    guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return 0 }
    for answerable in AnswerableChallenge.from([value]) {
        guard let digest = answerable.digest else { continue }
        let authorization = digest.authorization(
            user: "user",
            password: "secret",
            method: "GET",
            uri: "/a?b",
            nonceCount: 1,
            cnonce: "0a4f113b"
        )
        let parsed = AuthenticationHeader.challenges(in: [authorization])
        fuzzCheck(parsed.count == 1 && parsed[0].schemeName == "digest", "'\(authorization)' reads as \(parsed)")
        guard let credential = parsed.first else { continue }
        fuzzCheck(credential.parameters["realm"] == digest.realm, "realm changed: '\(authorization)'")
        fuzzCheck(credential.parameters["nonce"] == digest.nonce, "nonce changed: '\(authorization)'")
        fuzzCheck(credential.parameters["opaque"] == digest.opaque, "opaque changed: '\(authorization)'")
        fuzzCheck(credential.parameters["uri"] == "/a?b", "uri changed: '\(authorization)'")
        let response = credential.parameters["response"] ?? ""
        fuzzCheck(
            (response.count == 32 || response.count == 64)
                && response.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) },
            "response '\(response)'"
        )
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzDigestChallenge(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzDigestChallenge) }
}
