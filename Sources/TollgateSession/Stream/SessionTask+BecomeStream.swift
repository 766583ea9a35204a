import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import TollgateHTTP

extension SessionTask {
    /// Hands the response's connection to a new stream task (`becomeStream`); this data task ends
    /// silently. After a 101 the stream carries the new protocol; after any other response it
    /// carries the body's bytes as they come on the wire (those the task held first), and then
    /// whatever the server sends — a body framed in chunks cannot be carried so (its framing is
    /// the session's), and fails the task with `unsupportedOperation`.
    func becomeStream() {
        guard let dataTask = self as? DataTask, let response else {
            fail(SessionError(.badServerResponse, engine.request?.url, "only a data task's response can become a stream"))
            return
        }
        if response.status == 101 {
            becomeUpgradedStream(dataTask)
            return
        }
        if FieldList.elements(response.headerFields.values(for: .transferEncoding)).contains(where: { $0.lowercased() == "chunked" }) {
            fail(SessionError(
                .unsupportedOperation, engine.request?.url,
                "a chunked response cannot become a stream: its framing belongs to the session"
            ))
            return
        }
        var held = ByteBuffer()
        for piece in engine.machine.takeHeldPieces() { held.writeImmutableBuffer(piece) }
        guard let connection = engine.machine.connection else {
            handOver(dataTask, connection: nil, held: held)
            return
        }
        handOver(dataTask, connection: connection, held: held)
    }

    /// After a 101: the HTTP handlers can only leave the pipeline once the 101 has fully ended.
    private func becomeUpgradedStream(_ dataTask: DataTask) {
        guard let connection = engine.machine.connection else {
            fail(SessionError(.badServerResponse, engine.request?.url, "the upgraded connection is gone"))
            return
        }
        guard engine.upgradeEnded else {
            engine.becomeStreamPending = true
            return
        }
        handOver(dataTask, connection: connection, held: nil)
    }

    /// Makes the stream task and gives it the connection (`held`: the body bytes the data task
    /// kept, for a response that is not a 101). Without a connection (the server closed it after
    /// the body) the stream task reads `held`, then EOF, and cannot write.
    private func handOver(_ dataTask: DataTask, connection: OriginConnection?, held: ByteBuffer?) {
        if let connection { session.pool.detach(connection) }
        let stream = session.adoptStream(from: self)
        stream.observed.withLock { state in
            state.currentRequest = currentRequest
            state.response = response
            _ = state.lifecycle.resume()
        }
        stream.engine.startDate = Date()
        stream.engine.transactions = engine.transactions
        retireAfterHandover()

        DelegateDispatch.notify(dataDelegates) { $0.dataTask(dataTask, didBecome: stream) }
        guard let connection else {
            stream.onLoop { stream.adoptBytes(held ?? ByteBuffer()) }
            return
        }
        let midResponse = held != nil
        let first = held ?? ByteBuffer()
        connection.onLoop {
            // A server that closed after the body (Connection: close) left only the held bytes.
            if midResponse, !connection.channel.isActive {
                stream.onLoop { stream.adoptBytes(first) }
                return
            }
            let handler = try? connection.handler.convertToStream(midResponse: midResponse, first: first)
            stream.onLoop {
                if let handler {
                    stream.adopt(channel: connection.channel, handler: handler)
                } else {
                    // The exchange's transport: the connection, or only the stream of an h2 one.
                    connection.onLoop { connection.handler.close() }
                    stream.fail(SessionError(.networkConnectionLost, nil, "the connection is gone"))
                }
            }
        }
    }
}
