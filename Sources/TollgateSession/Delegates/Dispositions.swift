/// The answer to an authentication challenge, as `URLSession.AuthChallengeDisposition`.
public struct ChallengeDisposition: Sendable {
    enum Base: Sendable {
        case useCredential(Credential?)
        case performDefaultHandling
        case cancelAuthenticationChallenge(SessionError?)
        case rejectProtectionSpace
        /// The delegate does not implement this handler: route the challenge onward.
        case unanswered
    }

    let base: Base

    /// Answer with this credential (nil: continue without one).
    public static func useCredential(_ credential: Credential?) -> ChallengeDisposition {
        ChallengeDisposition(base: .useCredential(credential))
    }

    /// Do what the session would do without a delegate.
    public static let performDefaultHandling = ChallengeDisposition(base: .performDefaultHandling)
    /// Cancel the task.
    public static let cancelAuthenticationChallenge = ChallengeDisposition(base: .cancelAuthenticationChallenge(nil))
    /// Cancel the task with this error (e.g. a pin mismatch), so the failure says what was wrong.
    public static func cancelAuthenticationChallenge(reason: SessionError) -> ChallengeDisposition {
        ChallengeDisposition(base: .cancelAuthenticationChallenge(reason))
    }
    /// Refuse this protection space; the session tries the next one the server offered.
    public static let rejectProtectionSpace = ChallengeDisposition(base: .rejectProtectionSpace)
    static let unanswered = ChallengeDisposition(base: .unanswered)
}

/// What to do with a response whose head arrived, as `URLSession.ResponseDisposition`.
public struct ResponseDisposition: Sendable {
    enum Base: Sendable {
        case allow
        case cancel
        case becomeDownload
        case becomeStream
        case unanswered
    }

    let base: Base

    /// Turn the data task into a download task that writes the rest of the body to a file.
    public static let becomeDownload = ResponseDisposition(base: .becomeDownload)
    /// Turn the data task into a stream task that owns the connection (after a 101 upgrade).
    public static let becomeStream = ResponseDisposition(base: .becomeStream)
    /// Go on receiving the body.
    public static let allow = ResponseDisposition(base: .allow)
    /// Cancel the task (it completes with `cancelled`).
    public static let cancel = ResponseDisposition(base: .cancel)
    static let unanswered = ResponseDisposition(base: .unanswered)
}

/// The answer to `willPerformHTTPRedirection`: follow (possibly a changed request) or stop
/// and deliver the redirect response itself (URLSession's `completionHandler(nil)`).
public struct RedirectDecision: Sendable {
    enum Base: Sendable {
        case follow(Request)
        case deliverRedirectResponse
        case unanswered
    }

    let base: Base

    /// Follow, sending this request.
    public static func follow(_ request: Request) -> RedirectDecision { RedirectDecision(base: .follow(request)) }
    /// Do not follow; the redirect response becomes the task's response.
    public static let deliverRedirectResponse = RedirectDecision(base: .deliverRedirectResponse)
    static let unanswered = RedirectDecision(base: .unanswered)

    /// The request the task sends next under this decision, given the one the session proposed:
    /// the decision's own request, the proposed one when the delegate left the question
    /// unanswered (the session's default is to follow), or nil when the redirect is delivered.
    public func requestToFollow(proposed: Request) -> Request? {
        switch base {
        case .follow(let request): request
        case .unanswered: proposed
        case .deliverRedirectResponse: nil
        }
    }
}

/// The answer to `willCacheResponse`: store this (possibly changed) response, or nothing.
public struct CacheDecision: Sendable {
    enum Base: Sendable {
        case store(CachedResponse)
        case doNotStore
        case unanswered
    }

    let base: Base

    /// Store this response.
    public static func store(_ response: CachedResponse) -> CacheDecision { CacheDecision(base: .store(response)) }
    /// Store nothing.
    public static let doNotStore = CacheDecision(base: .doNotStore)
    static let unanswered = CacheDecision(base: .unanswered)
}

/// The answer to `willBeginDelayedRequest`, as `URLSession.DelayedRequestDisposition`.
public struct DelayedRequestDisposition: Sendable {
    enum Base: Sendable {
        case continueLoading
        case useNewRequest(Request)
        case cancel
        case unanswered
    }

    let base: Base

    /// Load the original request.
    public static let continueLoading = DelayedRequestDisposition(base: .continueLoading)
    /// Load this request instead.
    public static func useNewRequest(_ request: Request) -> DelayedRequestDisposition {
        DelayedRequestDisposition(base: .useNewRequest(request))
    }
    /// Cancel the task.
    public static let cancel = DelayedRequestDisposition(base: .cancel)
    static let unanswered = DelayedRequestDisposition(base: .unanswered)
}

/// The answer to `needNewBodyStream`: a fresh stream, or nil when the body cannot be given again.
public struct BodyStreamDecision: Sendable {
    enum Base: Sendable {
        case stream(BodyStream?)
        case unanswered
    }

    let base: Base

    /// Send this stream as the body (nil: none can be given; the task fails).
    public static func stream(_ stream: BodyStream?) -> BodyStreamDecision { BodyStreamDecision(base: .stream(stream)) }
    static let unanswered = BodyStreamDecision(base: .unanswered)
}
