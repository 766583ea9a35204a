/// The receivers of one task message, in the order they are asked: the task's own delegate,
/// then the session delegate. At most two, so they are carried in a value, not an array: a
/// message is sent several times per request, and each array was an allocation.
struct DelegatePair<Receiver> {
    /// Asked first; nil only when there is no receiver at all.
    let first: Receiver?
    /// Asked when the first did not implement the message.
    let second: Receiver?

    /// The pair of `first` and `second`, moved up when `first` is nil.
    init(_ first: Receiver?, _ second: Receiver?) {
        if first == nil {
            self.first = second
            self.second = nil
        } else {
            self.first = first
            self.second = second
        }
    }

    /// The receivers of a task's messages: its own delegate, then the session's (once, when
    /// they are the same object).
    static func task(own: Receiver?, session: Receiver?) -> DelegatePair where Receiver == any TaskDelegate {
        DelegatePair(own, own != nil && own === session ? nil : session)
    }

    /// The receivers after the first.
    var rest: DelegatePair { DelegatePair(second, nil) }
}
