/// Waits until `condition` holds, polling; fails the test after `timeout`.
func eventually(
    timeout: Duration = .seconds(5),
    _ what: String = "condition",
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(what: what)
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// `eventually` gave up.
struct WaitTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}
