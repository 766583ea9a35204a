import Foundation
import NIOCore
import TollgateHTTP
import TollgateTLS

/// Raising challenges and answering HTTP Basic and Digest authentication (RFC 7617, RFC 7616).
extension SessionTask {
    /// Routes a challenge as the seeds say: server trust, client certificate, NTLM and Negotiate go
    /// to the session delegate's session-level handler first and to the task level only if it does
    /// not implement one; Basic and Digest go to the task level. `then` gets nil when nobody answered.
    func raise(_ challenge: AuthenticationChallenge, then: @escaping (ChallengeDisposition?) -> Void) {
        let taskLevel: () -> Void = { [self] in
            ask(
                taskDelegates,
                { delegate, answer in delegate.task(self, didReceive: challenge, completionHandler: answer) },
                isUnanswered: { if case .unanswered = $0.base { true } else { false } },
                then: then
            )
        }
        guard challenge.protectionSpace.authenticationMethod.isSessionLevel, let sessionDelegate = session.delegate
        else {
            taskLevel()
            return
        }
        ask(
            DelegatePair(sessionDelegate, nil),
            { delegate, answer in delegate.session(self.session, didReceive: challenge, completionHandler: answer) },
            isUnanswered: { if case .unanswered = $0.base { true } else { false } }
        ) { answer in
            if let answer { then(answer) } else { taskLevel() }
        }
    }

    /// A 401 with a Basic or Digest challenge the task can answer: ask for a credential (the
    /// task delegate, then the session delegate; default handling uses the credential storage)
    /// and, if one is given, send the request again with it. Returns false when the 401 is just
    /// the response.
    ///
    /// - A request carrying an Authorization of its own (the client's, not one the session
    ///   added) is not answered: its 401 is the client's.
    /// - The credential that was just refused is recorded: the challenge comes again with
    ///   `previousFailureCount` raised and the refused one as `proposedCredential`, and the task
    ///   never sends a refused credential again — answering with it delivers the 401.
    /// - A Digest answer refused with `stale=true` is sent again with the new nonce, without
    ///   asking anyone and without counting a failure.
    /// - `rejectProtectionSpace` moves on to the next challenge the server offered (Digest
    ///   SHA-256, then MD5, then Basic).
    func handleAuthenticationRequired(_ head: HTTPResponseHead) -> Bool {
        guard head.status == 401, let request = engine.request else { return false }
        var state = engine.authentication
        let ownAuthorization = request.headerFields[.authorization]
        if let ownAuthorization, ownAuthorization != state.addedAuthorization { return false }
        let refused = ownAuthorization == nil ? nil : state.current
        state.current = nil
        if let refused {
            state.reject(refused)
            session.configuration.credentialStorage?.forgetAuthenticated(in: refused.space)
        }
        engine.authentication = state
        let challenges = AnswerableChallenge.from(head.headerFields.values(for: "WWW-Authenticate"))
        guard !challenges.isEmpty else { return false }

        // stale=true: the password was right, the nonce old. Same credential, new nonce.
        if let refused, let previous = refused.digest, state.staleRetries < TaskAuthentication.maximumStaleRetries,
            let fresh = challenges.compactMap(\.digest).first(where: {
                $0.stale && $0.realm == previous.realm && $0.nonce != previous.nonce
            })
        {
            engine.authentication.staleRetries += 1
            engine.authentication.rejected[refused.space.normalized]?.removeAll {
                $0.user == refused.credential.user && $0.password == refused.credential.password
            }
            let hold = engine.machine.holdForRetry(.authentication, head: head, newRequest: request)
            retryWithCredential(
                refused.credential,
                space: refused.space,
                challenge: AnswerableChallenge(kind: .digest(fresh), realm: fresh.realm),
                request: request,
                hold: hold
            )
            return true
        }

        let hold = engine.machine.holdForRetry(.authentication, head: head, newRequest: request)
        if offerChallenge(challenges, from: 0, head: head, request: request, hold: hold) { return true }
        engine.machine.retryNotNeeded()
        return false
    }

    /// Raises the challenge for `challenges[index]`; on `rejectProtectionSpace` the next one.
    /// Returns false when no challenge is left to raise (nothing was raised).
    private func offerChallenge(
        _ challenges: [AnswerableChallenge],
        from index: Int,
        head: HTTPResponseHead,
        request: Request,
        hold: Int
    ) -> Bool {
        guard index < challenges.count else { return false }
        let offered = challenges[index]
        let space = ProtectionSpace(
            host: request.url.host,
            port: request.url.effectivePort,
            protocol: request.url.scheme,
            realm: offered.realm,
            authenticationMethod: offered.method
        )
        let attempts = engine.authenticationFailures[space, default: 0]
        // A delegate that keeps answering with new bad credentials must not loop forever.
        guard attempts < SessionTask.maximumAuthenticationAttempts else { return false }
        engine.authenticationFailures[space] = attempts + 1
        let state = engine.authentication
        let storage = session.configuration.credentialStorage
        let proposed = state.rejected[space.normalized]?.last ?? storage?.credential(answering: space)
        var parameters: [String: String] = [:]
        if let digest = offered.digest {
            parameters = ["nonce": digest.nonce, "algorithm": digest.algorithm.rawValue]
            if let qop = digest.qop { parameters["qop"] = qop }
            if digest.stale { parameters["stale"] = "true" }
        }
        let challenge = AuthenticationChallenge(
            protectionSpace: space,
            previousFailureCount: state.failureCount(for: space),
            proposedCredential: proposed,
            failureResponse: head,
            parameters: parameters
        )
        setReadDemand(false)
        raise(challenge) { [self] disposition in
            // An answer for a hold that is gone (the task completed) is late: the machine drops it.
            guard engine.machine.pendingRetry(hold) != nil else { return }
            setReadDemand(true)
            let deliverHeld = { [self] in
                if let pending = engine.machine.deliverRetry(hold) { deliverPendingAsResponse(pending) }
            }
            switch disposition?.base {
            case .useCredential(let credential?) where credential.user != nil:
                if engine.authentication.isRejected(credential, in: space) {
                    deliverHeld()  // refused once in this task: not sent again
                } else {
                    retryWithCredential(credential, space: space, challenge: offered, request: request, hold: hold)
                }
            case .cancelAuthenticationChallenge(let reason?):
                fail(reason)
            case .cancelAuthenticationChallenge(nil):
                fail(
                    SessionError(
                        .userCancelledAuthentication,
                        request.url,
                        "the authentication challenge was cancelled"
                    )
                )
            case .rejectProtectionSpace:
                if !offerChallenge(challenges, from: index + 1, head: head, request: request, hold: hold) {
                    deliverHeld()
                }
            case .performDefaultHandling, .unanswered, .none:
                // As URLSession: the storage's default credential for the space, unless refused.
                if let stored = session.configuration.credentialStorage?.credential(answering: space),
                    !engine.authentication.isRejected(stored, in: space)
                {
                    retryWithCredential(stored, space: space, challenge: offered, request: request, hold: hold)
                } else {
                    deliverHeld()
                }
            case .useCredential:
                deliverHeld()
            }
        }
        return true
    }

    /// Sends `request` again with `credential` answering `challenge`, once the 401 has ended.
    private func retryWithCredential(
        _ credential: Credential,
        space: ProtectionSpace,
        challenge: AnswerableChallenge,
        request: Request,
        hold: Int
    ) {
        guard engine.machine.pendingRetry(hold) != nil else { return }
        var retry = request
        let value: String
        switch challenge.kind {
        case .basic:
            value = BasicAuthorization.value(user: credential.user ?? "", password: credential.password ?? "")
        case .digest(let digest):
            let count = engine.authentication.nonceCounts[digest.nonce, default: 0] + 1
            engine.authentication.nonceCounts[digest.nonce] = count
            value = digest.authorization(
                user: credential.user ?? "",
                password: credential.password ?? "",
                method: request.method.rawValue,
                uri: digestURI(for: request.url),
                nonceCount: count,
                cnonce: DigestChallenge.makeClientNonce()
            )
        }
        retry.headerFields.replaceOrAdd(name: .authorization, value: value)
        engine.authentication.addedAuthorization = value
        engine.authentication.current = TaskAuthentication.Attempt(
            space: space,
            credential: credential,
            preemptive: false,
            digest: challenge.digest
        )
        runRetryStep(engine.machine.followRetry(hold, with: retry))
    }

    /// The request-target the request is sent with: origin-form, or absolute-form through an
    /// upstream proxy (plain http).
    private func digestURI(for url: HTTPURL) -> String {
        session.configuration.upstreamProxy != nil && url.scheme == "http" ? url.absoluteString : url.pathAndQuery
    }

    /// Called as each request is prepared: keeps the record of an Authorization the session added
    /// (a retry, or a same-origin redirect carrying it), forgets it otherwise, and adds Basic
    /// preemptively for a space that already authenticated in the session.
    func applySessionAuthorization(to request: inout Request) {
        // Changed in place: a copy of the task's authentication state per request retained
        // everything in it.
        let present = request.headerFields[.authorization]
        if present == nil || present != engine.authentication.addedAuthorization {
            engine.authentication.addedAuthorization = nil
            engine.authentication.current = nil
        }
        if present == nil, let storage = session.configuration.credentialStorage,
            let (space, credential) = storage.preemptiveCredential(for: request.url),
            !engine.authentication.isRejected(credential, in: space)
        {
            let value = BasicAuthorization.value(user: credential.user ?? "", password: credential.password ?? "")
            request.headerFields.add(name: .authorization, value: value)
            engine.authentication.addedAuthorization = value
            engine.authentication.current = TaskAuthentication.Attempt(
                space: space,
                credential: credential,
                preemptive: true,
                digest: nil
            )
        }
    }

    /// Called with every network response head: a response to a request the session
    /// authenticated that is not a 401 means the credential worked — it is kept in the credential
    /// storage as its persistence says, and Basic is sent preemptively from then on.
    func noteAuthenticationResult(_ head: HTTPResponseHead) {
        guard head.status != 401, let attempt = engine.authentication.current, let url = engine.request?.url else {
            return
        }
        engine.authentication.current = nil
        guard let storage = session.configuration.credentialStorage, attempt.credential.persistence != .none else {
            return
        }
        if storage.credentials(for: attempt.space)[attempt.credential.storageUser] != attempt.credential {
            storage.set(attempt.credential, for: attempt.space)
        }
        storage.rememberAuthenticated(attempt.credential, in: attempt.space, url: url)
    }

    /// Whether a response must not be stored because storing would record the Authorization the
    /// session added (the credential's secret) with it: it varies on Authorization. (Without
    /// Vary the request's fields are not stored, and a shared cache stores responses to
    /// requests with Authorization only when the response allows it, RFC 9111 §3.5.)
    func sessionAuthorizationForbidsStoring(_ head: HTTPResponseHead) -> Bool {
        guard let added = engine.authentication.addedAuthorization,
            engine.request?.headerFields[.authorization] == added
        else { return false }
        let vary = Vary(fieldValues: head.headerFields.values(for: .vary))
        return vary.isWildcard || vary.fieldNames.contains("authorization")
    }
}

/// Finds a Basic challenge (RFC 7617) among WWW-Authenticate values.
enum BasicChallenge {
    /// The realm of the first Basic challenge, "" when it names none, nil when there is none.
    static func realm(in values: [String]) -> String? {
        AuthenticationHeader.challenges(in: values).first { $0.schemeName == "basic" }.map { $0.realm ?? "" }
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
        let exchange = engine.machine.exchange
        evaluateServerTrust(evaluation, host: connection.key.host, port: connection.key.port) { [self] failure in
            guard engine.machine.accepts(exchange: exchange) else {
                session.pool.release(connection, reusable: false)
                return
            }
            if let failure {
                engine.machine.leasedConnectionDropped()
                session.pool.release(connection, reusable: false)
                fail(failure)
                return
            }
            connection.trustApproved = true
            connection.onLoop { connection.handler.approvePeer() }
            proceed()
        }
    }

    /// Raises the server-trust challenge for a finished handshake with `host:port` (session level
    /// first) and turns the answer into the failure it means, nil when the server is trusted:
    /// a credential that trusts the server accepts it; cancel and reject refuse it; default
    /// handling (or no answer) keeps the chain's own verdict. Used by the pool's connections and
    /// by a stream task's ``StreamTask/startSecureConnection()``.
    func evaluateServerTrust(
        _ evaluation: TLSPeerEvaluation,
        host: String,
        port: Int,
        then decided: @escaping (SessionError?) -> Void
    ) {
        let space = ProtectionSpace(host: host, port: port, protocol: "https", authenticationMethod: .serverTrust)
        let challenge = AuthenticationChallenge(protectionSpace: space, serverTrust: evaluation)
        raise(challenge) { [self] disposition in
            decided(ServerTrustAnswer.failure(evaluation, disposition: disposition, host: host, url: engine.request?.url))
        }
    }
}
