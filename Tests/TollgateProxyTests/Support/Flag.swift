import NIOConcurrencyHelpers

/// A flag set once from any thread.
final class NIOLockedValueBoxFlag: Sendable {
    private let box = NIOLockedValueBox(false)
    func set() { box.withLockedValue { $0 = true } }
    func clear() { box.withLockedValue { $0 = false } }
    var isSet: Bool { box.withLockedValue { $0 } }
}

/// Bytes appended from any thread.
final class NIOLockedValueBoxBytes: Sendable {
    private let box = NIOLockedValueBox<[UInt8]>([])
    func append(_ bytes: [UInt8]) { box.withLockedValue { $0 += bytes } }
    var bytes: [UInt8] { box.withLockedValue { $0 } }
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Strings appended from any thread.
final class LockedLines: Sendable {
    private let box = NIOLockedValueBox<[String]>([])
    func append(_ line: String) { box.withLockedValue { $0.append(line) } }
    var lines: [String] { box.withLockedValue { $0 } }
}
