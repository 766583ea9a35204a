import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix

/// A request body produced piece by piece, with back-pressure (the model of an input stream
/// handed over in `needNewBodyStream`).
///
/// The producer calls ``write(_:)`` and waits for its future before writing more; the future
/// completes once the session has taken the piece to send, so at most one piece is buffered.
/// ``finish(error:)`` ends the body. Thread-safe: producer and consumer may be on any threads.
public final class BodyStream: Sendable {
    private struct Pending {
        var buffer: ByteBuffer
        var promise: EventLoopPromise<Void>?
    }

    private struct State {
        var queue: [Pending] = []
        var finished = false
        var failure: (any Error)?
        var waiter: EventLoopPromise<ByteBuffer?>?
        var consumerGone = false
    }

    private let state = NIOLockedValueBox(State())

    /// Creates an empty, open stream.
    public init() {}

    /// A stream that yields the given pieces and ends.
    public convenience init(pieces: [ByteBuffer]) {
        self.init()
        for piece in pieces { _ = write(piece) }
        finish()
    }

    /// Hands one piece to the session. The future completes when the piece was taken, and fails
    /// when the task ended before taking it.
    @discardableResult
    public func write(_ buffer: ByteBuffer, on eventLoop: (any EventLoop)? = nil) -> EventLoopFuture<Void> {
        let loop = eventLoop ?? BodyStream.fallbackLoop
        let promise = loop.makePromise(of: Void.self)
        let action: (EventLoopPromise<ByteBuffer?>?, Bool) = state.withLockedValue { state in
            if state.consumerGone || state.finished { return (nil, true) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, false)
            }
            state.queue.append(Pending(buffer: buffer, promise: promise))
            return (nil, false)
        }
        if action.1 {
            promise.fail(SessionError(.cancelled, nil, "the body stream is closed"))
        } else if let waiter = action.0 {
            waiter.succeed(buffer)
            promise.succeed(())
        }
        return promise.futureResult
    }

    /// Ends the body; with an error, the task sending it fails.
    public func finish(error: (any Error)? = nil) {
        let waiter: EventLoopPromise<ByteBuffer?>? = state.withLockedValue { state in
            guard !state.finished else { return nil }
            state.finished = true
            state.failure = error
            guard state.queue.isEmpty, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        if let waiter {
            if let error { waiter.fail(error) } else { waiter.succeed(nil) }
        }
    }

    /// The next piece, or nil at the end. One read at a time.
    func read(on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer?> {
        enum Outcome {
            case piece(ByteBuffer, EventLoopPromise<Void>?)
            case end((any Error)?)
            case wait(EventLoopFuture<ByteBuffer?>)
        }
        let outcome: Outcome = state.withLockedValue { state in
            if !state.queue.isEmpty {
                let next = state.queue.removeFirst()
                return .piece(next.buffer, next.promise)
            }
            if state.finished { return .end(state.failure) }
            let promise = eventLoop.makePromise(of: ByteBuffer?.self)
            state.waiter = promise
            return .wait(promise.futureResult)
        }
        switch outcome {
        case .piece(let buffer, let promise):
            promise?.succeed(())
            return eventLoop.makeSucceededFuture(buffer)
        case .end(let error):
            if let error { return eventLoop.makeFailedFuture(error) }
            return eventLoop.makeSucceededFuture(nil)
        case .wait(let future):
            return future
        }
    }

    /// The consumer stopped reading (task ended): pending and later writes fail.
    func close() {
        let (pending, waiter): ([Pending], EventLoopPromise<ByteBuffer?>?) = state.withLockedValue { state in
            state.consumerGone = true
            defer {
                state.queue = []
                state.waiter = nil
            }
            return (state.queue, state.waiter)
        }
        for item in pending { item.promise?.fail(SessionError(.cancelled, nil, "the task ended")) }
        waiter?.succeed(nil)
    }

    private static var fallbackLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.next() }
}
