import Foundation
import NIOCore
import TollgateHTTP
import TollgateTLS

/// Raising challenges and answering HTTP Basic authentication.
extension SessionTask {
    /// Routes a challenge as the seeds say: server trust, client certificate, NTLM and Negotiate go
    /// to the session delegate's session-level handler first and to the task level only if it does
    /// not implement one; Basic and Digest go to the task level. `then` gets nil when nobody answered.
    func raise(_ challenge: AuthenticationChallenge, then: @escaping (ChallengeDisposition?) -> Void) {
        let taskLevel: () -> Void = { [self] in
            ask(
                taskDelegates,
                { delegate, answer in delegate.task(self, didReceive: challenge, completionHandler: answer) },
                isNotImplemented: { if case .notImplemented = $0.base { true } else { false } },
                then: then
            )
        }
        guard challenge.protectionSpace.authenticationMethod.isSessionLevel, let sessionDelegate = session.delegate else {
            taskLevel()
            return
        }
        ask(
            [sessionDelegate],
            { delegate, answer in delegate.session(self.session, didReceive: challenge, completionHandler: answer) },
            isNotImplemented: { if case .notImplemented = $0.base { true } else { false } }
        ) { answer in
            if let answer { then(answer) } else { taskLevel() }
        }
    }

    /// A 401 with a Basic challenge the task can answer: ask for a credential and, if one is
    /// given, send the request again with it. Returns false when the 401 is just the response.
    func handleAuthenticationRequired(_ head: HTTPResponseHead) -> Bool {
        guard head.status == 401, let request = engine.request,
            let realm = BasicChallenge.realm(in: head.headerFields.values(for: "WWW-Authenticate"))
        else { return false }
        let space = ProtectionSpace(
            host: request.url.host, port: request.url.effectivePort, protocol: request.url.scheme,
            realm: realm, authenticationMethod: .httpBasic
        )
        let failures = engine.authenticationFailures[space, default: 0]
        // A delegate that keeps answering with bad credentials must not loop forever.
        guard failures < SessionTask.maximumAuthenticationAttempts else { return false }
        engine.authenticationFailures[space] = failures + 1
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures, failureResponse: head)
        engine.redirect = TaskEngine.PendingRedirect(head: head, newRequest: request, countsAsRedirect: false)
        setReadDemand(false)
        raise(challenge) { [self] disposition in
            guard !isDone, var pending = engine.redirect else { return }
            setReadDemand(true)
            switch disposition?.base {
            case .useCredential(let credential?) where credential.user != nil:
                var retry = request
                let token = Data("\(credential.user ?? ""):\(credential.password ?? "")".utf8).base64EncodedString()
                retry.headerFields.replaceOrAdd(name: "Authorization", value: "Basic \(token)")
                pending.follow = retry
                pending.body = []
                engine.redirect = pending
                if pending.ended { followRedirect(to: retry) }
            case .cancelAuthenticationChallenge(let reason?):
                fail(reason)
            case .cancelAuthenticationChallenge(nil):
                fail(SessionError(.userCancelledAuthentication, request.url, "the authentication challenge was cancelled"))
            default:
                deliverPendingAsResponse(pending)
            }
        }
        return true
    }
}

/// Finds a Basic challenge (RFC 7617) among WWW-Authenticate values.
enum BasicChallenge {
    /// The realm of the first Basic challenge, "" when it names none, nil when there is none.
    static func realm(in values: [String]) -> String? {
        for value in values {
            let trimmed = value.trimmingASCIIWhitespace()
            let scheme = trimmed.prefix { $0 != " " }
            guard scheme.lowercased() == "basic" else { continue }
            // auth-params are `name=value` (value a token or quoted-string) separated by commas.
            var rest = Substring(trimmed.dropFirst(scheme.count))
            while !rest.isEmpty {
                rest = rest.drop { $0 == " " || $0 == "," }
                let name = rest.prefix { $0 != "=" && $0 != "," && $0 != " " }
                rest = rest.dropFirst(name.count).drop { $0 == " " }
                guard rest.first == "=" else { continue }
                rest = rest.dropFirst().drop { $0 == " " }
                var parsed = ""
                if rest.first == "\"" {
                    rest = rest.dropFirst()
                    while let c = rest.first, c != "\"" {
                        if c == "\\", rest.count > 1 { rest = rest.dropFirst() }
                        parsed.append(rest.first!)
                        rest = rest.dropFirst()
                    }
                    rest = rest.dropFirst()
                } else {
                    parsed = String(rest.prefix { $0 != "," && $0 != " " })
                    rest = rest.dropFirst(parsed.count)
                }
                if name.lowercased() == "realm" { return parsed }
            }
            return ""
        }
        return nil
    }
}

extension SessionTask {
    /// Raises the server-trust challenge for a new https connection and approves the connection
    /// (or fails the task) by the answer: default handling trusts exactly what OpenSSL verified
    /// against the configured roots; `useCredential(.serverTrust)` accepts the chain as it is
    /// (the delegate checked it: pins, or an `insecure` rule).
    func decideServerTrust(on connection: OriginConnection, then proceed: @escaping () -> Void) {
        guard let evaluation = connection.establishment.tlsEvaluation else {
            proceed()
            return
        }
        let key = connection.key
        let space = ProtectionSpace(host: key.host, port: key.port, protocol: "https", authenticationMethod: .serverTrust)
        let challenge = AuthenticationChallenge(protectionSpace: space, serverTrust: evaluation)
        let generation = engine.generation
        raise(challenge) { [self] disposition in
            guard engine.generation == generation, !isDone else {
                session.pool.release(connection, reusable: false)
                return
            }
            let untrusted: SessionError? = {
                switch evaluation.trustResult {
                case .trusted: return nil
                case .untrusted(let verification):
                    return SessionError(.serverCertificateUntrusted, engine.request?.url, "\(key.host): \(verification)")
                case .noCertificate:
                    return SessionError(.serverCertificateUntrusted, engine.request?.url, "\(key.host) presented no certificate")
                }
            }()
            let failure: SessionError?
            switch disposition?.base {
            case .useCredential(let credential?) where credential.trustsServer:
                failure = nil
            case .cancelAuthenticationChallenge(let reason):
                failure = reason ?? SessionError(.cancelled, engine.request?.url, "the server-trust challenge was cancelled")
            case .rejectProtectionSpace:
                failure = untrusted ?? SessionError(.serverCertificateUntrusted, engine.request?.url, "\(key.host): trust rejected")
            default:
                failure = untrusted
            }
            if let failure {
                engine.phase = .idle
                session.pool.release(connection, reusable: false)
                fail(failure)
                return
            }
            connection.trustApproved = true
            connection.onLoop { connection.handler.approvePeer() }
            proceed()
        }
    }
}
