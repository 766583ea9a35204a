public import Foundation
import TollgateHTTP
public import TollgateSession
public import TollgateTLS

/// Server trust and client certificates: the answer to the server-trust challenge the session
/// raises for every new https connection, and the TLS settings of connections to a host.
///
/// The challenge is decided from the first rule matching the connection's host and port (the
/// rules in force when the connection is made), in this order:
///
/// 1. `trust.deny`: refused, `serverCertificateUntrusted` "… denied by hosts[i]" (the proxy refuses
///    denied hosts before connecting; this covers sessions used directly).
/// 2. A `client-identity` whose files could not be loaded: refused, `secureConnectionFailed` naming
///    the file and the reason.
/// 3. `insecure: true`: accepted as it is, and one warning line for every connection.
/// 4. The chain must be trusted by OpenSSL against the rule's roots (default handling); if not,
///    refused, `serverCertificateUntrusted` naming the host and OpenSSL's reason.
/// 5. Pins, when the rule has some: any certificate of the *verified* chain must have one of them
///    (``ChainVerifier/checkPins(chain:pins:host:)``). A mismatch with `pin-mode: enforce` is refused,
///    `pinMismatch` with the ``PinMismatchError`` text; with `pin-mode: report`, or once `pins-expire`
///    has passed (the pin set is stale), it is accepted and reported.
///
/// Each refusal and report is one log line on ``TrustEnvironment/logger`` and one count in
/// ``TrustEnvironment/failures``.
extension PolicySessionDelegate {
    // MARK: SessionDelegate

    /// Answers the server-trust challenge from the host rules (see the extension's description),
    /// and the client-certificate challenge with the rule's `client-identity`
    /// (``clientCertificateAnswer(host:port:)``). Other session-level challenges (NTLM, Negotiate),
    /// and a client-certificate challenge for a host whose rule has no identity, are not answered
    /// here: they go on to the task's own delegate.
    public func session(
        _ session: Session,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        let space = challenge.protectionSpace
        if space.authenticationMethod == .clientCertificate,
            let answer = clientCertificateAnswer(host: space.host, port: space.port)
        {
            completionHandler(answer)
            return
        }
        guard space.authenticationMethod == .serverTrust, let evaluation = challenge.serverTrust
        else {
            // The protocol's default answer, "not implemented", routes the challenge to the task level.
            NoSessionLevelChallengeHandler.shared.session(
                session,
                didReceive: challenge,
                completionHandler: completionHandler
            )
            return
        }
        let verdict = serverTrustVerdict(
            host: challenge.protectionSpace.host,
            port: challenge.protectionSpace.port,
            evaluation: evaluation
        )
        if let event = verdict.event { trustEnvironment.record(event) }
        if case .trusted = verdict.outcome { recordExpiry(of: evaluation, host: challenge.protectionSpace.host, port: challenge.protectionSpace.port) }
        completionHandler(verdict.disposition)
    }

    /// A health check's server trust: the rules' verdict, as the challenge gets it, without its
    /// log line and count (the check's failure is reported once, when the backend goes down).
    public func healthCheckTrust(host: String, port: Int, evaluation: TLSPeerEvaluation) -> ChallengeDisposition {
        serverTrustVerdict(host: host, port: port, evaluation: evaluation).disposition
    }

    /// Notes when the chain a host's connection was just verified with expires (its earliest
    /// `notAfter`), for a host a rule matches: the gateway's partners, not every site a forward
    /// proxy's clients visit.
    private func recordExpiry(of evaluation: TLSPeerEvaluation, host: String, port: Int) {
        guard let earliest = evaluation.verifiedChain.map(\.notAfter).min(),
            decisions.decide(host: host, port: port).rule != nil
        else { return }
        trustEnvironment.expiries.record(host: host, expires: earliest)
    }

    // MARK: decisions as values

    /// The answer to a client-certificate challenge from `host:port`: the rule's `client-identity`
    /// (its certificate and key files), or nil when the rule has none. (A rule's identity is
    /// normally presented from the start, through ``tlsConfiguration(host:port:defaults:)``; the
    /// challenge comes when it was not, e.g. a stream task's or an identity added by a reload.)
    public func clientCertificateAnswer(host: String, port: Int) -> ChallengeDisposition? {
        guard let setting = decisions.decide(host: host, port: port, now: Date()).clientIdentity else { return nil }
        return .useCredential(Credential(clientCertificatePath: setting.certificate, keyPath: setting.key))
    }

    /// What the rules say about a connection to `host:port` that presented `evaluation`; nothing is
    /// logged or counted (the challenge handler does that with the verdict's event).
    ///
    /// - Parameters:
    ///   - host: the host connected to (no brackets for IPv6).
    ///   - port: its port.
    ///   - evaluation: OpenSSL's evaluation of the presented chain against the rule's roots.
    ///   - now: when, for `pins-expire`.
    public func serverTrustVerdict(
        host: String,
        port: Int,
        evaluation: TLSPeerEvaluation,
        now: Date = Date()
    ) -> ServerTrustVerdict {
        let decisions = self.decisions
        let decision = decisions.decide(host: host, port: port, now: now)
        let rule = decision.rule?.label ?? "-"
        let ruleText = decision.rule?.label ?? "no rule"
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let url = HTTPURL(string: "https://\(target)/")
        let trust = decision.trust

        func refuse(
            _ code: SessionError.Code,
            _ detail: String,
            _ kind: TrustEvent.Kind,
            _ line: String
        )
            -> ServerTrustVerdict
        {
            ServerTrustVerdict(
                outcome: .refused(SessionError(code, url, detail)),
                event: TrustEvent(kind: kind, host: host, port: port, rule: rule, message: line)
            )
        }

        if decision.deny {
            let detail = "\(target) denied by \(ruleText)"
            return refuse(.serverCertificateUntrusted, detail, .denied, "refused \(target): denied by \(ruleText)")
        }

        if let setting = decision.clientIdentity,
            case .failure(let error) = trustEnvironment.files.identity(for: setting)
        {
            // Logged once per connection by tlsConfiguration(host:port:defaults:), which ran first
            // and also covers a server that aborts the handshake before this challenge.
            let detail = "client-identity of \(ruleText) for \(target): \(error)"
            return ServerTrustVerdict(outcome: .refused(SessionError(.secureConnectionFailed, url, detail)), event: nil)
        }

        let presented = Self.describe(evaluation.presentedChain)
        if trust.insecure {
            let verdict: String
            switch evaluation.trustResult {
            case .trusted: verdict = "the chain would have been trusted"
            case .untrusted(let error): verdict = "unverified: \(error.reason)"
            case .noCertificate: verdict = "no certificate presented"
            }
            let line =
                "INSECURE connection to \(target): certificate verification is off (\(ruleText): insecure: true); "
                + "\(verdict); presented: \(presented)"
            return ServerTrustVerdict(
                outcome: .acceptedInsecure,
                event: TrustEvent(kind: .insecure, host: host, port: port, rule: rule, message: line)
            )
        }

        let expected =
            trust.pins.isEmpty ? "" : "; expected pins: \(trust.pins.map(\.description).joined(separator: ", "))"
        switch evaluation.trustResult {
        case .trusted:
            break
        case .untrusted(let error):
            let line =
                "refused \(target): untrusted certificate (\(ruleText), roots \(trust.roots)\(Self.crlsText(trust))): \(error)"
                + "\(expected); presented: \(presented)"
            let kind: TrustEvent.Kind = error.code == .certificateRevoked ? .revoked : .untrusted
            return refuse(.serverCertificateUntrusted, "\(host): \(error)", kind, line)
        case .noCertificate:
            let line = "refused \(target): no certificate presented (\(ruleText), roots \(trust.roots))\(expected)"
            return refuse(.serverCertificateUntrusted, "\(host) presented no certificate", .untrusted, line)
        }

        if trust.ocsp != .off, let problem = Self.ocspProblem(evaluation, check: trust.ocsp) {
            let line = "refused \(target): \(problem.why) (\(ruleText), ocsp \(trust.ocsp)); presented: \(presented)"
            return refuse(.serverCertificateUntrusted, "\(host): \(problem.why)", problem.kind, line)
        }
        guard !trust.pins.isEmpty else { return ServerTrustVerdict(outcome: .trusted, event: nil) }
        do {
            try ChainVerifier.checkPins(chain: evaluation.verifiedChain, pins: trust.pins, host: host)
            return ServerTrustVerdict(outcome: .trusted, event: nil)
        } catch {
            let mismatch = "\(error)"
            if trust.pinMode == .enforce {
                let line = "\(mismatch) (port \(port); refused: \(ruleText), pin-mode enforce)"
                return refuse(.pinMismatch, mismatch, .pinMismatch, line)
            }
            let why: String
            if trust.pinsExpired {
                let expiry = decisions.matcher.firstMatch(host: host, port: port)?.rule.trust.pinsExpire
                let date = expiry.map { " on \(Self.dateText($0))" } ?? ""
                why =
                    "allowed: \(ruleText) pins expired\(date) (pins-expire), the pin set is stale and only reported; "
                    + "update pins and pins-expire"
            } else {
                why = "allowed: \(ruleText), pin-mode report"
            }
            return ServerTrustVerdict(
                outcome: .trusted,
                event: TrustEvent(
                    kind: .pinReport,
                    host: host,
                    port: port,
                    rule: rule,
                    message: "\(mismatch) (port \(port); \(why))"
                )
            )
        }
    }

    /// Why the server's stapled OCSP response refuses a verified chain under `check`, or nil.
    /// `check`: a verified response saying revoked; `require`: also none, one that cannot be
    /// verified (not about the leaf, not its issuer's signature, out of date) or not `good`. A
    /// must-staple leaf (RFC 7633) is judged under `require` whatever the rule says, as browsers
    /// judge it.
    static func ocspProblem(
        _ evaluation: TLSPeerEvaluation, check asked: HostRule.Trust.OCSPCheck
    ) -> (kind: TrustEvent.Kind, why: String)? {
        let chain = evaluation.verifiedChain
        let mustStaple = chain.first?.mustStaple == true
        let check: HostRule.Trust.OCSPCheck = mustStaple ? .require : asked
        let required = { (why: String) in check == .require ? (TrustEvent.Kind.untrusted, why) : nil }
        guard let stapled = evaluation.stapledOCSPResponse else {
            return required(mustStaple ? "no OCSP response stapled, and the certificate is must-staple" : "no OCSP response stapled")
        }
        let response: OCSPResponse
        do {
            response = try OCSPResponse(verifying: stapled, for: chain)
        } catch {
            return required("the stapled OCSP response cannot be used: \(error)")
        }
        switch response.status {
        case .good: return nil
        case .revoked: return (.revoked, "revoked, says the stapled OCSP response of \(response.thisUpdate)")
        case .unknown: return required("the stapled OCSP response does not know the certificate")
        }
    }

    // MARK: TLS settings per host

    /// The TLS settings of a new connection to `host:port` under the rules in force: the rule's
    /// trust roots (the system's, PEM bundle files, or both) and its client identity, the files
    /// read once (``TrustFileCache``, emptied by a reload, so a bundle or identity rotated under the
    /// same path is read again). A ``PolicyRuntime`` installs this as every session's
    /// `SessionConfiguration.tlsConfiguration`.
    ///
    /// A bundle that cannot be read is left as a file for the TLS layer, which fails the connection
    /// when it builds the context (`secureConnectionFailed`, "TLS settings for HOST: opening PATH …").
    /// An identity that cannot be loaded is left out here, and the server-trust challenge refuses the
    /// connection with `secureConnectionFailed` naming the file.
    ///
    /// - Parameters:
    ///   - host: the host connected to.
    ///   - port: its port.
    ///   - defaults: the session's defaults (minimum version, ALPN, timeouts), kept; `h2` taken out of
    ///     the ALPN offer for a host whose rule says `http2: off`.
    public func tlsConfiguration(host: String, port: Int, defaults: TLSConfiguration) -> TLSConfiguration {
        let decision = decisions.decide(host: host, port: port)
        let files = trustEnvironment.files
        let rule = decision.rule?.label ?? "-"
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        func report(_ kind: TrustEvent.Kind, _ error: TrustFileCache.LoadError) {
            let line = "connection to \(target) fails (\(rule)): \(error)"
            trustEnvironment.record(TrustEvent(kind: kind, host: host, port: port, rule: rule, message: line))
        }

        var configuration = defaults
        if decision.http2 == .off { configuration.applicationProtocols.removeAll { $0 == "h2" } }
        configuration.requestsCertificateStatus = decision.trust.ocsp != .off && !decision.trust.insecure
        /// What the files at `paths` hold, and the files that cannot be read: left as files, so
        /// that the TLS layer fails the connection with its own error naming them.
        func load<Item>(
            _ paths: [String], _ kind: TrustEvent.Kind, _ read: (String) -> Result<[Item], TrustFileCache.LoadError>
        ) -> (items: [Item], unreadable: [String]) {
            var items: [Item] = []
            var unreadable: [String] = []
            for path in paths {
                switch read(path) {
                case .success(let read): items += read
                case .failure(let error):
                    unreadable.append(path)
                    report(kind, error)
                }
            }
            return (items, unreadable)
        }
        // An optional bundle that does not exist (mkcert never run on this machine) adds nothing.
        let present = decision.trust.roots.optionalBundles.filter { FileManager.default.fileExists(atPath: $0) }
        let (anchors, unreadable) = load(decision.trust.roots.bundles + present, .rootsUnreadable, files.certificates(inBundle:))
        let (revocationLists, unreadableLists) = load(decision.trust.crls, .crlsUnreadable, files.revocationLists(inFile:))
        configuration.trustRoots = TrustRoots(
            includesSystemRoots: decision.trust.roots.includesSystem,
            pemFiles: unreadable,
            certificates: anchors,
            revocationLists: revocationLists,
            revocationListFiles: unreadableLists
        )
        if let setting = decision.clientIdentity {
            switch files.identity(for: setting) {
            case .success(let identity): configuration.identity = identity
            case .failure(let error): report(.clientIdentity, error)
            }
        }
        return configuration
    }

    // MARK: helpers

    /// `, crls a.pem, b.crl`, or nothing when the rule names none.
    static func crlsText(_ trust: PolicyDecision.TrustSummary) -> String {
        trust.crls.isEmpty ? "" : ", crls \(trust.crls.joined(separator: ", "))"
    }

    /// `sha256/… CN=leaf, sha256/… CN=CA`, or `(none)`.
    static func describe(_ chain: [Certificate]) -> String {
        chain.isEmpty ? "(none)" : chain.map { "\($0.spkiPin) \($0.subject)" }.joined(separator: ", ")
    }

    /// `2026-01-31T00:00:00Z`.
    static func dateText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}

/// A session delegate that implements nothing: calling its challenge handler gives the protocol's
/// default answer ("not implemented"), which sends a challenge on to the task-level handler.
private final class NoSessionLevelChallengeHandler: SessionDelegate {
    static let shared = NoSessionLevelChallengeHandler()
}
