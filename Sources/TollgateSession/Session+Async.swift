import NIOConcurrencyHelpers
public import NIOCore
public import TollgateHTTP

extension Session {
    /// Loads `request` and returns the whole body and the response. As with a completion handler,
    /// the data-delivery delegate methods are not called; challenges and redirects still are.
    /// Cancelling the calling Swift task cancels the session task.
    public func data(for request: Request) async throws -> (ByteBuffer, HTTPResponseHead) {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                do {
                    let task = try dataTask(with: request) { body, response, error in
                        if let error {
                            continuation.resume(throwing: error)
                        } else if let response {
                            continuation.resume(returning: (body ?? ByteBuffer(), response))
                        } else {
                            continuation.resume(throwing: SessionError(.badServerResponse, request.url, "no response"))
                        }
                    }
                    box.set(task)
                    task.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Sends `body` with `request` and returns the response body and head.
    public func upload(for request: Request, from body: ByteBuffer) async throws -> (ByteBuffer, HTTPResponseHead) {
        var request = request
        request.body = .bytes(body)
        return try await data(for: request)
    }
}

/// Holds the task for the cancellation handler, which may run before the task exists.
private final class TaskBox: @unchecked Sendable {
    private var task: SessionTask?
    private var cancelled = false
    private let lock = NIOLock()

    func set(_ task: SessionTask) {
        let cancelNow = lock.withLock { () -> Bool in
            self.task = task
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock { () -> SessionTask? in
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}

