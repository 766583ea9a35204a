import NIOCore

extension TimeAmount {
    /// The same length of time as a Swift `Duration`.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
