import Foundation
import NIOCore
import TollgateHTTP

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
        engine.authenticationFailures[space] = failures + 1
        let challenge = AuthenticationChallenge(protectionSpace: space, previousFailureCount: failures, failureResponse: head)
        engine.redirect = TaskEngine.PendingRedirect(head: head, newRequest: request, countsAsRedirect: false)
        raise(challenge) { [self] disposition in
            guard !isDone, var pending = engine.redirect else { return }
            switch disposition?.base {
            case .useCredential(let credential?) where credential.user != nil:
                var retry = request
                let token = Data("\(credential.user ?? ""):\(credential.password ?? "")".utf8).base64EncodedString()
                retry.headerFields.replaceOrAdd(name: "Authorization", value: "Basic \(token)")
                pending.follow = retry
                pending.body = []
                engine.redirect = pending
                if pending.ended { followRedirect(to: retry) }
            case .cancelAuthenticationChallenge:
                fail(SessionError(.cancelled, request.url, "the authentication challenge was cancelled"))
            default:
                engine.redirect = nil
                deliverResponse(pending.head)
                for piece in pending.body { responseBodyReceived(piece) }
                if pending.ended { responseEnded(reusable: false) }
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
            guard trimmed.lowercased().hasPrefix("basic") else { continue }
            let rest = trimmed.dropFirst(5)
            guard rest.isEmpty || rest.first == " " else { continue }
            guard let realmRange = rest.lowercased().range(of: "realm=") else { return "" }
            let offset = rest.lowercased().distance(from: rest.lowercased().startIndex, to: realmRange.upperBound)
            var realm = rest.dropFirst(offset)
            if realm.first == "\"" {
                realm = realm.dropFirst()
                return String(realm.prefix { $0 != "\"" })
            }
            return String(realm.prefix { $0 != "," && $0 != " " })
        }
        return nil
    }
}
