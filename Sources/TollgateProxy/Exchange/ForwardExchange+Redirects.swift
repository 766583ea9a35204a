import NIOCore
import TollgateHTTP
import TollgateSession

/// Redirects the session would follow (a session with `redirects: follow` or `follow-same-host`,
/// or one without a delegate) are checked against the destination rules *before* the session
/// sends the new request: an origin must not be able to make the proxy reach a denied address (an
/// internal service, the cloud metadata endpoint) by redirecting to it. Whether to follow stays the
/// policy's answer (the session delegate's); a redirect passed to the client is not checked here
/// (the client's own next request is).
extension ForwardExchange {
    func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: TollgateHTTP.HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        let decide: (@escaping @Sendable (RedirectDecision) -> Void) -> Void = { answer in
            if let policy = task.session.delegate as? any TaskDelegate {
                policy.task(task, willPerformHTTPRedirection: response, newRequest: newRequest, completionHandler: answer)
            } else {
                answer(.follow(newRequest))
            }
        }
        decide { [self] decision in
            guard let next = decision.requestToFollow(proposed: newRequest) else {
                completionHandler(decision)
                return
            }
            let check: @Sendable () -> Void = { [self] in
                // A 307 or 308 keeps the body: one that was not kept cannot be sent to the new
                // target, so the redirect is the client's (which can send its body again).
                if case .stream = next.body, !canResendBody {
                    completionHandler(.deliverRedirectResponse)
                } else {
                    followIfAllowed(next, decision: decision, completionHandler: completionHandler)
                }
            }
            if eventLoop.inEventLoop { check() } else { eventLoop.execute(check) }
        }
    }

    /// Follows `next` when the destination rules allow its target, else answers 403 instead.
    private func followIfAllowed(
        _ next: Request,
        decision: RedirectDecision,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        recheckDestination(next.url) { [self] verdict in
            eventLoop.execute { [self] in
                guard let verdict else {
                    completionHandler(decision)
                    return
                }
                if !isFinished, !responseStarted {
                    ownAnswer = OwnResponse(
                        .hostDenied,
                        "a redirect to \(next.url.authority) leads to a denied destination: \(verdict)"
                    )
                }
                // Not followed; the redirect response is then refused in favour of the 403.
                completionHandler(.deliverRedirectResponse)
            }
        }
    }

    /// Checks a redirect target; `then` gets nil when it is allowed, else why not.
    private func recheckDestination(_ target: HTTPURL, then: @escaping @Sendable (String?) -> Void) {
        let host: CanonicalHost
        do throws(CanonicalHost.Invalid) {
            host = try CanonicalHost.parse(target.host)
        } catch {
            then(error.description)
            return
        }
        if rules.offline {
            // Nothing is looked up offline; the session serves the target from the cache or not at all.
            if case .denied(let why) = rules.destinations.offlineVerdict(for: host, port: target.effectivePort) {
                then(why)
            } else {
                then(nil)
            }
            return
        }
        rules.destinations.check(host, port: target.effectivePort, on: eventLoop) { verdict in
            switch verdict {
            case .allowed: then(nil)
            case .denied(let why), .unresolvable(let why): then(why)
            }
        }
    }
}
