import NIOCore
import TollgateHTTP
import TollgateSession

/// Sending the client's body again: the session asks for it anew when it follows a 307 or 308,
/// answers a 401 with the rule's credential, or sends a request the server refused (REFUSED_STREAM,
/// GOAWAY) once more. The client's body streams through once, so the exchange keeps what it
/// relayed (``RequestBodySpool``: 256 KiB in memory, the rest in a temporary file, up to
/// `limits.resendable-body`) and gives a new stream of it (the rest of the body, if it is still
/// arriving, follows on the new stream). A larger body is not kept: a redirect that would need it
/// is passed to the client and a challenge is not answered — the client gets the 307 or the 401
/// and can send its body again itself — and a refused request fails with 502
/// `upstream-connection-lost`, saying why.
extension ForwardExchange {
    /// Whether the client's body (all of it so far) is kept to be sent again.
    var canResendBody: Bool { keptBody?.isKept ?? true }

    /// Keeps a piece of the client's body for a resend (until the limit).
    func keepForResend(_ piece: ByteBuffer) {
        if keptBody == nil { keptBody = RequestBodySpool(limit: rules.resendableBody, eventLoop: eventLoop) }
        keptBody!.append(piece)
    }

    /// A new stream of the body for a resend (nil when it was not kept): what arrived so far,
    /// then, while the client still sends, the rest as it comes.
    func resendBodyStream() -> BodyStream? {
        guard canResendBody, !isFinished else { return nil }
        let stream = BodyStream()
        bodyStream = stream
        guard let keptBody else {
            if requestEnded { stream.finish() }
            return stream
        }
        // From a file the pieces arrive in turn; the client's next pieces wait behind them.
        replayingBody = keptBody.isInFile
        keptBody.replay(send: { [self] piece in send(piece, to: stream) }) { [self] complete in
            guard bodyStream === stream, !isFinished else { return }
            replayingBody = false
            if !complete {
                stream.finish(error: SessionError(.cannotWriteToFile, url, "the request body kept to be sent again could not be read back"))
            } else if requestEnded {
                stream.finish()
            }
        }
        return stream
    }

    /// Basic and Digest challenges go to the policy (its rule's credential), unless answering
    /// would send a body that was not kept: then the 401 is the client's.
    func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        let method = challenge.protectionSpace.authenticationMethod
        if method == .httpBasic || method == .httpDigest, head.hasBody, !canResendBody {
            completionHandler(.rejectProtectionSpace)
            return
        }
        if let policy = task.session.delegate as? any TaskDelegate {
            policy.task(task, didReceive: challenge, completionHandler: completionHandler)
        } else {
            completionHandler(.performDefaultHandling)
        }
    }
}
