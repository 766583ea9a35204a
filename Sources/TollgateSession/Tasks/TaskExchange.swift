import NIOConcurrencyHelpers
import NIOCore
import TollgateHTTP

/// Forwards one exchange's events from the connection's event loop to its task's, tagged with
/// the exchange's number: the task's ``TaskMachine`` turns away events of an exchange it has
/// ended or abandoned.
final class TaskExchange: ExchangeSink, @unchecked Sendable {
    /// Replaced when a data task becomes a download task mid-response (on the task's loop).
    private var currentTarget: SessionTask
    /// Guards ``currentTarget`` when the connection's loop is not the task's; nil when they are
    /// the same (the pool prefers that): then every access is on one thread, and each event of
    /// the exchange costs no lock.
    private let lock: NIOLock?
    let exchange: Int

    init(task: SessionTask, exchange: Int, connectionLoop: any EventLoop) {
        self.currentTarget = task
        self.lock = connectionLoop === task.eventLoop ? nil : NIOLock()
        self.exchange = exchange
    }

    private var target: SessionTask {
        guard let lock else { return currentTarget }
        return lock.withLock { currentTarget }
    }

    /// Sends the rest of this exchange's events to another task (which took over the engine).
    func retarget(to task: SessionTask) {
        guard let lock else {
            currentTarget = task
            return
        }
        lock.withLock { currentTarget = task }
    }

    /// Runs `body(task, value)` on the task's loop if the task still runs this exchange. On the
    /// task's own loop (the pool prefers connections there) it runs at once; `body` captures
    /// nothing, so the usual path allocates no closure.
    @inline(__always)
    private func forward<Value: Sendable>(_ value: Value, _ body: @escaping @Sendable (SessionTask, Value) -> Void) {
        let task = target
        if task.eventLoop.inEventLoop {
            if task.engine.machine.accepts(exchange: exchange) { body(task, value) }
            return
        }
        let exchange = self.exchange
        task.eventLoop.execute {
            guard task.engine.machine.accepts(exchange: exchange) else { return }
            body(task, value)
        }
    }

    func exchangeDidWriteRequestHead(bytes: Int) { forward(bytes) { $0.requestHeadWritten(bytes: $1) } }
    func exchangeDidWriteBody(bytes: Int) { forward(bytes) { $0.requestBodyWritten(bytes: $1) } }
    func exchangeDidFinishRequest() { forward(()) { task, _ in task.requestFinished() } }
    func exchangeDidReceiveInterim(_ head: HTTPResponseHead) { forward(head) { $0.interimResponseReceived($1) } }
    func exchangeDidReceiveHead(_ head: HTTPResponseHead) { forward(head) { $0.responseHeadReceived($1) } }
    func exchangeDidReceiveBody(_ buffer: ByteBuffer) { forward(buffer) { $0.responseBodyReceived($1) } }
    func exchangeDidReceiveEnd(reusable: Bool) { forward(reusable) { $0.responseEnded(reusable: $1) } }
    func exchangeDidFail(_ error: SessionError, responseStarted: Bool) {
        forward((error, responseStarted)) { $0.exchangeFailed($1.0, responseStarted: $1.1) }
    }
}
