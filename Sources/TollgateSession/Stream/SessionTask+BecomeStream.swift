import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import TollgateHTTP

extension SessionTask {
    /// Hands an upgraded connection (after a 101) to a new stream task; this data task ends silently.
    func becomeStream() {
        guard let dataTask = self as? DataTask, response?.status == 101, case .exchanging(let connection) = engine.phase else {
            fail(SessionError(.badServerResponse, engine.request?.url, "only a 101 (Switching Protocols) response can become a stream"))
            return
        }
        // The HTTP handlers can only leave the pipeline once the 101 has fully ended.
        guard engine.upgradeEnded else {
            engine.becomeStreamPending = true
            return
        }
        session.pool.detach(connection)
        let stream = session.adoptStream(from: self)
        stream.observed.withLock { state in
            state.currentRequest = currentRequest
            state.response = response
            _ = state.lifecycle.resume()
        }
        stream.engine.startDate = Date()
        stream.engine.transactions = engine.transactions
        retireAfterHandover()

        let receivers = dataDelegates
        DelegateDispatch.notify(receivers) { $0.dataTask(dataTask, didBecome: stream) }
        connection.onLoop {
            let handler = try? connection.handler.convertToStream()
            stream.onLoop {
                if let handler {
                    stream.adopt(channel: connection.channel, handler: handler)
                } else {
                    connection.channel.close(promise: nil)
                    stream.fail(SessionError(.networkConnectionLost, nil, "the upgraded connection is gone"))
                }
            }
        }
    }
}
