/// The session's delegate: session-wide events and the session-level challenge handler, in
/// the model of `URLSessionDelegate`. A session delegate usually also conforms to
/// ``TaskDelegate`` and ``DataTaskDelegate`` to receive the messages of every task that has no
/// delegate of its own (or whose delegate does not implement a method).
///
/// Every method is optional: the extension gives each the seeds' default behaviour.
/// Methods are called on the task's event loop (the session's "delegate queue"); completion
/// handlers may be called from any thread, at any later time.
public protocol SessionDelegate: AnyObject, Sendable {
    /// The session was invalidated (`finishTasksAndInvalidate` once all tasks ended, or
    /// `invalidateAndCancel`); `error` is nil for an orderly invalidation. The session drops
    /// its reference to the delegate after this call.
    func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?)

    /// A session-level challenge (server trust, client certificate, NTLM, Negotiate). When this
    /// method is not implemented the challenge goes to the task-level handler.
    func session(
        _ session: Session,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    )

    /// A background session delivered every event of its tasks and has none left
    /// (`URLSessionDidFinishEventsForBackgroundURLSession`): sent each time the last task of a
    /// background session completes — after the tasks a re-created session picked up, and after
    /// any later batch — before `didBecomeInvalidWithError` when the session is finishing.
    func sessionDidFinishEvents(forBackgroundSession session: Session)
}

extension SessionDelegate {
    public func session(_ session: Session, didBecomeInvalidWithError error: (any Error)?) {
        DelegateDispatch.markUnanswered()
    }

    public func session(
        _ session: Session,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        completionHandler(.unanswered)
    }

    public func sessionDidFinishEvents(forBackgroundSession session: Session) {}
}
