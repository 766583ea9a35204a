public import Foundation
public import TollgateSession

/// Where one request goes under the rules in force when it was routed: the ``Session`` that
/// carries it and everything the policy decided for its URL (``PolicyRuntime/route(_:)``).
///
/// A route is a snapshot: a reload after it was made changes nothing in it, and its session
/// stays usable for the task created from it (a session retired by the reload finishes its
/// tasks before it is invalidated). A task created on it after such a reload fails with
/// `SessionError.Code.sessionInvalidated`: create the task right after routing, and on that
/// error route again once (the new rules then apply).
public struct PolicyRoute: Sendable {
    /// The session of the rule's named session; its delegate is a ``PolicySessionDelegate``.
    public let session: Session
    /// That session's name (`default` when no rule matched).
    public let sessionName: String
    /// What the policy decides for the URL (``PolicyDecisions/decide(for:now:)``).
    public let decision: PolicyDecision
    /// The times the decision holds for (``PolicyDecisions/decideWithValidity(host:port:now:)``):
    /// under the same rules, a route made for the same host and port in this range is the same.
    public let holds: Range<Date>

    /// Creates a route.
    public init(session: Session, sessionName: String, decision: PolicyDecision, holds: Range<Date> = PolicyDecisions.always) {
        self.session = session
        self.sessionName = sessionName
        self.decision = decision
        self.holds = holds
    }

    /// Whether the rule refuses the host (`trust.deny: true`): answer `403` with
    /// `Tollgate-Error: host-denied` and create no task.
    public var isDenied: Bool { decision.deny }

    /// The rule for the access log: `hosts[2]:*.example.com` (its position in `hosts` and its
    /// first pattern), or `-` when no rule matched.
    public var ruleLabel: String { decision.rule?.label ?? "-" }
}
