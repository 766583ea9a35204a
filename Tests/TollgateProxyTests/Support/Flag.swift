import NIOConcurrencyHelpers

/// A flag set once from any thread.
final class NIOLockedValueBoxFlag: Sendable {
    private let box = NIOLockedValueBox(false)
    func set() { box.withLockedValue { $0 = true } }
    var isSet: Bool { box.withLockedValue { $0 } }
}
