import Foundation
import NIOConcurrencyHelpers
import TollgateCache
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// A loopback origin that demands HTTP authentication and checks every answer as a server
/// would (RFC 7617, RFC 7616): user, password, realm, uri, nonce, nc, cnonce, qop, response.
final class AuthOrigin: Sendable {
    struct Options: Sendable {
        var user = "alice"
        var password = "secret"
        var realm = "Restricted"
        /// Digest algorithms offered, one challenge each, in this order; empty: no Digest.
        var digestAlgorithms: [String] = ["MD5"]
        /// `qop` offered (nil: none, the RFC 2069 form).
        var qop: String? = "auth"
        /// Also offer Basic (after the Digest challenges).
        var offerBasic = false
        /// The first nonce handed out is stale: a correct answer with it gets 401 stale=true.
        var firstNonceStale = false
        var opaque = "0paque"
        /// Extra response fields on success.
        var successHeaders: HeaderFields = [:]
    }

    /// What happened to each request, in order: `challenge`, `ok basic`, `ok digest MD5`,
    /// `stale`, `refused …`.
    var log: [String] { state.withLockedValue { $0.log } }
    let origin: LoopbackOrigin
    let options: Options
    private let state: NIOLockedValueBox<State>

    struct State {
        var log: [String] = []
        var nonces: [String] = []
        var stale: Set<String> = []
        var lastCount: [String: Int] = [:]
    }

    private init(origin: LoopbackOrigin, options: Options, state: NIOLockedValueBox<State>) {
        self.origin = origin
        self.options = options
        self.state = state
    }

    static func start(_ options: Options = Options()) async throws -> AuthOrigin {
        let state = NIOLockedValueBox(State())
        let origin = try await LoopbackOrigin.start { request, respond in
            let (status, headers, body) = answer(request, options, state)
            respond.send(status: status, headers: headers, body: body)
        }
        return AuthOrigin(origin: origin, options: options, state: state)
    }

    func url(_ path: String = "/private/page") -> HTTPURL { origin.url(path) }
    func stop() { origin.stop() }

    private static func answer(
        _ request: RecordedRequest,
        _ options: Options,
        _ state: NIOLockedValueBox<State>
    ) -> (Int, HeaderFields, String) {
        func challenge(_ note: String, stale: Bool = false) -> (Int, HeaderFields, String) {
            var headers = HeaderFields()
            let nonce = state.withLockedValue { state -> String in
                let nonce = "n\(state.nonces.count)-" + UUID().uuidString
                state.nonces.append(nonce)
                if options.firstNonceStale, state.nonces.count == 1 { state.stale.insert(nonce) }
                state.log.append(note)
                return nonce
            }
            for algorithm in options.digestAlgorithms {
                var value =
                    "Digest realm=\"\(options.realm)\", nonce=\"\(nonce)\", algorithm=\(algorithm), opaque=\"\(options.opaque)\""
                if let qop = options.qop { value += ", qop=\"\(qop)\"" }
                if stale { value += ", stale=true" }
                headers.add(name: "WWW-Authenticate", value: value)
            }
            if options.offerBasic {
                headers.add(name: "WWW-Authenticate", value: "Basic realm=\"\(options.realm)\", charset=\"UTF-8\"")
            }
            return (401, headers, "denied")
        }
        guard let authorization = request.headerFields["Authorization"] else { return challenge("challenge") }
        if authorization.hasPrefix("Basic ") {
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map {
                String(decoding: $0, as: UTF8.self)
            }
            guard options.offerBasic, decoded == "\(options.user):\(options.password)" else {
                return challenge("refused basic")
            }
            state.withLockedValue { $0.log.append("ok basic") }
            return (200, options.successHeaders, "welcome")
        }
        guard authorization.hasPrefix("Digest ") else { return challenge("refused scheme") }
        let parsed = AuthenticationHeader.challenges(in: [authorization]).first?.parameters ?? [:]
        guard let algorithm = parsed["algorithm"], options.digestAlgorithms.contains(algorithm),
            let nonce = parsed["nonce"], let response = parsed["response"],
            parsed["username"] == options.user, parsed["realm"] == options.realm, parsed["uri"] == request.target,
            parsed["opaque"] == options.opaque
        else { return challenge("refused fields") }
        let known = state.withLockedValue { $0.nonces.contains(nonce) }
        guard known else { return challenge("refused nonce") }
        let hash: (String) -> String = { text in
            algorithm.uppercased().hasPrefix("SHA-256")
                ? SHA256.hex(SHA256.hash(Array(text.utf8))) : SHA256.hex(MD5.hash(Array(text.utf8)))
        }
        let ha2 = hash("\(request.method):\(request.target)")
        let ha1 = hash("\(options.user):\(options.realm):\(options.password)")
        let expected: String
        if let qop = options.qop {
            guard parsed["qop"] == qop, let nc = parsed["nc"], nc.count == 8, let count = Int(nc, radix: 16),
                let cnonce = parsed["cnonce"], !cnonce.isEmpty
            else { return challenge("refused qop") }
            let fresh = state.withLockedValue { state -> Bool in
                defer { state.lastCount[nonce] = max(state.lastCount[nonce] ?? 0, count) }
                return count > (state.lastCount[nonce] ?? 0)
            }
            guard fresh else { return challenge("refused replay") }
            expected = hash("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)")
        } else {
            guard parsed["qop"] == nil, parsed["nc"] == nil else { return challenge("refused qop") }
            expected = hash("\(ha1):\(nonce):\(ha2)")
        }
        guard expected == response else { return challenge("refused password") }
        if state.withLockedValue({ $0.stale.contains(nonce) }) { return challenge("stale", stale: true) }
        state.withLockedValue { $0.log.append("ok digest \(algorithm)") }
        return (200, options.successHeaders, "welcome")
    }
}

/// A task delegate answering challenges with a script, recording what it was asked.
final class ChallengeAnswerer: SessionDelegate, TaskDelegate, @unchecked Sendable {
    private let lock = NIOLock()
    private var _challenges: [AuthenticationChallenge] = []
    let answer: @Sendable (AuthenticationChallenge) -> ChallengeDisposition

    init(_ answer: @escaping @Sendable (AuthenticationChallenge) -> ChallengeDisposition) {
        self.answer = answer
    }

    var challenges: [AuthenticationChallenge] { lock.withLock { _challenges } }

    func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        lock.withLock { _challenges.append(challenge) }
        completionHandler(answer(challenge))
    }
}

enum AuthFixture {
    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-auth-\(UUID().uuidString)").path
    }

    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }
}
