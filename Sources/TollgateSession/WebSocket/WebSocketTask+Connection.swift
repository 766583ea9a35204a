import NIOCore
import NIOWebSocket
import Synchronization
import TollgateHTTP
import TollgateLoop

/// The runner of a WebSocket task's ``WebSocketMachine``: the handshake's answer, the upgraded
/// connection, and the machine's actions. Everything here runs on the task's event loop.
extension WebSocketTask {
    /// The final response to the handshake (after redirects and challenges): a 101 that checks
    /// out opens the connection once the 101 has ended; anything else fails the task.
    func handshakeAnswered(_ head: HTTPResponseHead) {
        let url = engine.request?.url
        guard head.status == 101 else {
            fail(SessionError(.badServerResponse, url, "the server answered the WebSocket handshake with \(head.status), not 101"))
            return
        }
        switch handshake.check(head) {
        case .failure(let problem):
            fail(SessionError(.badServerResponse, url, "WebSocket handshake: \(problem.reason)"))
        case .success(let agreed):
            shared.withLock {
                $0.chosenProtocol = agreed.chosenProtocol
                $0.compression = agreed.compression
            }
            // The HTTP handlers can only leave the pipeline once the 101 has fully ended.
            if engine.upgradeEnded { takeUpgradedConnection() } else { engine.becomeStreamPending = true }
        }
    }

    /// Takes the connection out of the pool and puts the frame handlers on it.
    func takeUpgradedConnection() {
        guard let connection = engine.machine.connectionTaken() else {
            fail(SessionError(.networkConnectionLost, engine.request?.url, "the upgraded connection is gone"))
            return
        }
        session.pool.detach(connection)
        engine.exchange = nil
        // An open WebSocket may rightly be quiet for long: no request or resource timeout runs
        // for it (as for a stream task).
        engine.resourceBudget = nil
        stopIdleTimer()
        stopResourceTimer()
        let maxFrameSize = min(maximumMessageSize, Int(UInt32.max))
        let compression = shared.withLock { $0.compression }
        connection.onLoop { [self] in
            let frames = try? connection.handler.convertToWebSocket(maxFrameSize: maxFrameSize, compression: compression)
            onLoop { [self] in
                guard let frames, !isDone else {
                    connection.channel.close(promise: nil)
                    fail(SessionError(.networkConnectionLost, engine.request?.url, "the upgraded connection is gone"))
                    return
                }
                opened(channel: connection.channel, frames: frames)
            }
        }
    }

    private func opened(channel: any Channel, frames: WebSocketFrameHandler) {
        self.channel = channel
        self.frames = frames
        let chosen = chosenProtocol
        DelegateDispatch.notify(delegates(as: (any WebSocketTaskDelegate).self)) { $0.webSocketTask(self, didOpenWithProtocol: chosen) }
        run(machine.handshakeCompleted())
        onChannelLoop { [self] in
            frames.attach { [self] event in onLoop { [self] in handle(event) } }
        }
    }

    private func handle(_ event: WebSocketFrameHandler.Event) {
        switch event {
        case .frame(let frame): run(machine.frameReceived(frame))
        case .decodingFailed(let error): run(machine.decodingFailed(error))
        case .inflationFailed(let failure): run(machine.inflationFailed(failure))
        case .closed: run(machine.connectionClosed())
        }
    }

    /// `cancel()` of an open connection: a close frame without a code, then the connection
    /// closes. False when the connection is not open (the task cancels as any other).
    func cancelOpenConnection() -> Bool {
        guard machine.isOpen else { return false }
        run(machine.cancel())
        return true
    }

    /// The task is completing: if it never opened, what waited for the handshake fails.
    func taskCompleting(with error: SessionError?) {
        run(machine.handshakeFailed(error ?? SessionError(.cancelled, engine.request?.url, "the task ended")))
    }

    /// Closes the connection (a failure of the task while it is open).
    func closeChannel() {
        channel?.close(promise: nil)
    }

    // MARK: actions

    func run(_ actions: [WebSocketMachine.Action]) {
        for action in actions { perform(action) }
        if let closure = machine.closure {
            shared.withLock {
                $0.closeCode = closure.code
                $0.closeReason = closure.reason
            }
        }
        let wanted = machine.wantsToRead
        if wanted != readDemand, let frames {
            readDemand = wanted
            onChannelLoop { frames.setReadDemand(wanted) }
        }
    }

    private func perform(_ action: WebSocketMachine.Action) {
        switch action {
        case .write(let frame, let completesSend):
            write(frame, completion: completesSend && !sendHandlers.isEmpty ? sendHandlers.removeFirst() : nil)
        case .deliver(let message):
            if !receiveHandlers.isEmpty { receiveHandlers.removeFirst()(.success(message)) }
        case .failReceive(let error):
            if !receiveHandlers.isEmpty { receiveHandlers.removeFirst()(.failure(located(error))) }
        case .failSend(let error):
            if !sendHandlers.isEmpty { sendHandlers.removeFirst()(located(error)) }
        case .failPing(let error):
            if !pingHandlers.isEmpty { pingHandlers.removeFirst()(located(error)) }
        case .answerPing:
            if !pingHandlers.isEmpty { pingHandlers.removeFirst()(nil) }
        case .failAllWaiting(let error):
            let error = located(error)
            let (receives, sends, pings) = (receiveHandlers, sendHandlers, pingHandlers)
            (receiveHandlers, sendHandlers, pingHandlers) = ([], [], [])
            for handler in receives { handler(.failure(error)) }
            for handler in sends { handler(error) }
            for handler in pings { handler(error) }
        case .reportClose(let code, let reason):
            DelegateDispatch.notify(delegates(as: (any WebSocketTaskDelegate).self)) {
                $0.webSocketTask(self, didCloseWith: code, reason: reason)
            }
        case .awaitPeerClose:
            closeTimer = eventLoop.scheduleTask(in: Self.closeTimeout) { [self] in run(machine.closeTimedOut()) }
        case .closeConnection(let error):
            closeTimer?.cancel()
            closeTimer = nil
            if let frames { onChannelLoop { frames.closeAfterWrites() } }
            engine.transaction.responseEndDate = TickClock.date
            complete(with: error.map(located))
        }
    }

    private func write(_ frame: WebSocketFrame, completion: (@Sendable (SessionError?) -> Void)?) {
        guard let frames else {
            completion?(SessionError(.networkConnectionLost, engine.request?.url, "the WebSocket is not open"))
            return
        }
        let url = engine.request?.url
        onChannelLoop { [self] in
            guard let written = frames.write(frame) else {
                onLoop { completion?(SessionError(.networkConnectionLost, url, "the connection is gone")) }
                return
            }
            guard let completion else { return }
            written.whenComplete { [self] result in
                onLoop {
                    if case .failure(let error) = result {
                        completion(SessionError(.networkConnectionLost, url, "writing the message: \(error)"))
                    } else {
                        completion(nil)
                    }
                }
            }
        }
    }

    private func located(_ error: SessionError) -> SessionError {
        var error = error
        if error.failingURL == nil { error.failingURL = engine.request?.url }
        return error
    }

    /// Runs `body` on the connection's event loop, which can differ from the task's.
    private func onChannelLoop(_ body: @escaping @Sendable () -> Void) {
        guard let loop = channel?.eventLoop, !loop.inEventLoop else {
            body()
            return
        }
        loop.execute(body)
    }
}
