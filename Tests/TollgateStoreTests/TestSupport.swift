import Foundation
import TollgateStore

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "tollgate-store-tests-" + UUID().uuidString
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with an environment in a temporary directory, closed and removed afterwards.
func withEnvironment<T>(
    _ options: EnvironmentOptions = EnvironmentOptions(),
    _ body: (Environment) throws -> T
) throws -> T {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let environment = try Environment(path: directory.path, options: options)
    defer { environment.close() }
    return try body(environment)
}

/// The async form of `withEnvironment`.
func withEnvironment<T>(
    _ options: EnvironmentOptions = EnvironmentOptions(),
    _ body: (Environment) async throws -> T
) async throws -> T {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let environment = try Environment(path: directory.path, options: options)
    defer { environment.close() }
    return try await body(environment)
}

/// A value shared between threads in tests.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// The permission bits of a file.
func permissions(of path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// An error thrown on purpose by test closures.
struct Deliberate: Error, Equatable {
    var tag = 0
}

/// Starts `body` on a new thread; the semaphore returned is signalled when it finishes.
func onOtherThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    return done
}
