import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Forwards one exchange's events from the connection's event loop to its task's, tagged with
/// the exchange's generation so the task ignores events of an exchange it has abandoned.
final class TaskExchange: ExchangeSink, @unchecked Sendable {
    /// Replaced when a data task becomes a download task mid-response.
    private let target: NIOLockedValueBox<SessionTask>
    let generation: Int

    init(task: SessionTask, generation: Int) {
        self.target = NIOLockedValueBox(task)
        self.generation = generation
    }

    /// Sends the rest of this exchange's events to another task (which took over the engine).
    func retarget(to task: SessionTask) {
        target.withLockedValue { $0 = task }
    }

    private func forward(_ body: @escaping @Sendable (SessionTask) -> Void) {
        let task = target.withLockedValue { $0 }
        let generation = self.generation
        task.onLoop {
            guard task.engine.generation == generation else { return }
            body(task)
        }
    }

    func exchangeDidWriteRequestHead(bytes: Int) { forward { $0.requestHeadWritten(bytes: bytes) } }
    func exchangeDidWriteBody(bytes: Int) { forward { $0.requestBodyWritten(bytes: bytes) } }
    func exchangeDidFinishRequest() { forward { $0.requestFinished() } }
    func exchangeDidReceiveHead(_ head: HTTPResponseHead) { forward { $0.responseHeadReceived(head) } }
    func exchangeDidReceiveBody(_ buffer: ByteBuffer) { forward { $0.responseBodyReceived(buffer) } }
    func exchangeDidReceiveEnd(reusable: Bool) { forward { $0.responseEnded(reusable: reusable) } }
    func exchangeDidFail(_ error: SessionError, responseStarted: Bool) {
        forward { $0.exchangeFailed(error, responseStarted: responseStarted) }
    }
}
