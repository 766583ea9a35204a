/// Waits until `condition` holds, polling every 10 ms; throws ``WaitTimeout`` after `timeout`.
public func eventually(
    timeout: Duration = .seconds(5),
    _ what: String = "condition",
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// ``eventually(timeout:_:_:)`` with what is awaited first (the proxy tests' spelling; 10 s).
public func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    try await eventually(timeout: timeout, what, condition)
}

/// A test's wait gave up.
public struct WaitTimeout: Error, CustomStringConvertible {
    /// What was awaited.
    public var what: String

    public init(what: String) {
        self.what = what
    }

    public var description: String { "timed out waiting for \(what)" }
}

/// Waits until an asynchronous `condition` holds (a command run for it, say), asking again every
/// 100 ms; throws ``WaitTimeout`` after `timeout`.
public func eventuallyAsync(_ what: String, timeout: Duration = .seconds(10), _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(what: what) }
        try await Task.sleep(for: .milliseconds(100))
    }
}
