import Foundation
import TollgateCache

/// HTTP Digest authentication (RFC 7616) on the client side: MD5 and SHA-256 (and their `-sess`
/// variants), `qop=auth` or no qop (RFC 2069 servers), `userhash`, `stale`.
/// `qop=auth-int` alone and SHA-512-256 are not supported: such a challenge is not answered.
struct DigestChallenge: Hashable, Sendable {
    enum Algorithm: String, Hashable, Sendable {
        case md5 = "MD5"
        case md5Session = "MD5-sess"
        case sha256 = "SHA-256"
        case sha256Session = "SHA-256-sess"

        /// Higher is preferred (RFC 7616 §3.7: the strongest the client supports).
        var strength: Int {
            switch self {
            case .md5: 0
            case .md5Session: 1
            case .sha256: 2
            case .sha256Session: 3
            }
        }

        var isSession: Bool { self == .md5Session || self == .sha256Session }

        func hash(_ text: String) -> String {
            let bytes = Array(text.utf8)
            switch self {
            case .md5, .md5Session: return SHA256.hex(MD5.hash(bytes))
            case .sha256, .sha256Session: return SHA256.hex(SHA256.hash(bytes))
            }
        }
    }

    var realm: String
    var nonce: String
    var opaque: String?
    var algorithm: Algorithm
    /// `auth` when the server offers it; nil when it names no qop (RFC 2069 compatibility).
    var qop: String?
    var stale: Bool
    var userhash: Bool

    /// The Digest challenge in `challenge`, or nil when it is not Digest or cannot be answered.
    init?(_ challenge: ParsedChallenge) {
        guard challenge.schemeName == "digest", let nonce = challenge.parameters["nonce"] else { return nil }
        let algorithmName = challenge.parameters["algorithm"] ?? "MD5"
        let known: [Algorithm] = [.md5, .md5Session, .sha256, .sha256Session]
        guard let algorithm = known.first(where: { $0.rawValue.lowercased() == algorithmName.lowercased() }) else {
            return nil
        }
        if let offered = challenge.parameters["qop"] {
            let options = offered.split(separator: ",").map { String($0).trimming(" \t").lowercased() }
            guard options.contains("auth") else { return nil }
            qop = "auth"
        } else {
            qop = nil
        }
        self.realm = challenge.parameters["realm"] ?? ""
        self.nonce = nonce
        self.opaque = challenge.parameters["opaque"]
        self.algorithm = algorithm
        self.stale = challenge.parameters["stale"]?.lowercased() == "true"
        self.userhash = challenge.parameters["userhash"]?.lowercased() == "true"
    }

    /// The `response` value and the whole `Authorization` field value.
    ///
    /// - Parameters:
    ///   - method: the request method.
    ///   - uri: the request-target as sent (`/path?query`).
    ///   - nonceCount: how many times this nonce was used, this time included (1 first).
    ///   - cnonce: the client nonce (random; fixed only in tests).
    func authorization(
        user: String,
        password: String,
        method: String,
        uri: String,
        nonceCount: Int,
        cnonce: String
    ) -> String {
        let nc =
            String(repeating: "0", count: max(0, 8 - String(nonceCount, radix: 16).count))
            + String(nonceCount, radix: 16)
        var ha1 = algorithm.hash("\(user):\(realm):\(password)")
        if algorithm.isSession { ha1 = algorithm.hash("\(ha1):\(nonce):\(cnonce)") }
        let ha2 = algorithm.hash("\(method):\(uri)")
        let response: String
        if let qop {
            response = algorithm.hash("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)")
        } else {
            response = algorithm.hash("\(ha1):\(nonce):\(ha2)")
        }
        var parts: [String] = []
        if userhash {
            parts.append("username=\(AuthenticationHeader.quoted(algorithm.hash("\(user):\(realm)")))")
        } else if user.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 32 && $0.value != 127 }) {
            parts.append("username=\(AuthenticationHeader.quoted(user))")
        } else {
            parts.append("username*=UTF-8''\(Self.percentEncoded(user))")
        }
        parts.append("realm=\(AuthenticationHeader.quoted(realm))")
        parts.append("uri=\(AuthenticationHeader.quoted(uri))")
        parts.append("algorithm=\(algorithm.rawValue)")
        parts.append("nonce=\(AuthenticationHeader.quoted(nonce))")
        if let qop {
            parts.append("nc=\(nc)")
            parts.append("cnonce=\(AuthenticationHeader.quoted(cnonce))")
            parts.append("qop=\(qop)")
        }
        parts.append("response=\(AuthenticationHeader.quoted(response))")
        if let opaque { parts.append("opaque=\(AuthenticationHeader.quoted(opaque))") }
        if userhash { parts.append("userhash=true") }
        return "Digest " + parts.joined(separator: ", ")
    }

    /// 16 random bytes, hex.
    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return SHA256.hex((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// RFC 8187 value-chars: attr-char kept, everything else %XX.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let character = Character(Unicode.Scalar(byte))
            if (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || "!#$&+-.^_`|~".contains(character)
            {
                out.append(character)
            } else {
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xf, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

/// HTTP Basic (RFC 7617): `Basic base64(user ":" password)`, UTF-8.
enum BasicAuthorization {
    static func value(user: String, password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}

/// The challenges of a 401 the session can answer, best first: Digest (SHA-256 before MD5),
/// then Basic.
struct AnswerableChallenge: Sendable {
    enum Kind: Sendable {
        case basic
        case digest(DigestChallenge)
    }

    var kind: Kind
    var realm: String

    var method: ProtectionSpace.AuthenticationMethod {
        if case .digest = kind { return .httpDigest }
        return .httpBasic
    }

    var digest: DigestChallenge? {
        if case .digest(let challenge) = kind { return challenge }
        return nil
    }

    /// Every challenge of `values` the session answers, best first.
    static func from(_ values: [String]) -> [AnswerableChallenge] {
        var digests: [DigestChallenge] = []
        var basics: [AnswerableChallenge] = []
        for challenge in AuthenticationHeader.challenges(in: values) {
            if let digest = DigestChallenge(challenge) {
                digests.append(digest)
            } else if challenge.schemeName == "basic" {
                basics.append(AnswerableChallenge(kind: .basic, realm: challenge.realm ?? ""))
            }
        }
        // A stable sort: among equals the server's order stays.
        let ordered = digests.enumerated().sorted {
            ($0.element.algorithm.strength, -$0.offset) > ($1.element.algorithm.strength, -$1.offset)
        }.map(\.element)
        return ordered.map { AnswerableChallenge(kind: .digest($0), realm: $0.realm) } + basics
    }
}
