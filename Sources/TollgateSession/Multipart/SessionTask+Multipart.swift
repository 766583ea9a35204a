import NIOCore
import TollgateHTTP

/// A data task's `multipart/x-mixed-replace` response (server push): after the response itself,
/// each part is announced with its own `didReceive` response (the part's header fields, the
/// response's status) and its bytes follow as `didReceive` data — the seeds' "the delegate
/// receives didReceiveResponse again; what was delivered before is replaced".
struct MultipartDelivery {
    var parser: MultipartReplaceParser
    var status: Int
    var version: String
    /// Events found but not yet delivered (a part's decision is awaited).
    var pending: [MultipartReplaceParser.Event] = []
}

extension SessionTask {
    /// Starts splitting the body into parts when `head` is a `multipart/x-mixed-replace` response
    /// and the session delivers parts (``SessionConfiguration/deliversMultipartReplaceParts``).
    func beginMultipartIfReplacing(_ head: HTTPResponseHead) {
        guard session.configuration.deliversMultipartReplaceParts, let type = head.headerFields["Content-Type"],
            let boundary = MultipartReplaceParser.boundary(ofContentType: type)
        else { return }
        engine.multipart = MultipartDelivery(parser: MultipartReplaceParser(boundary: boundary), status: head.status, version: head.version)
    }

    /// A piece of a multipart body: parsed, and its events delivered in order.
    func deliverMultipart(_ buffer: ByteBuffer) {
        guard var delivery = engine.multipart else { return }
        delivery.pending += delivery.parser.feed(buffer)
        engine.multipart = delivery
        drainMultipart()
    }

    /// Delivers the parts' events until one needs the delegate's decision.
    private func drainMultipart() {
        guard let dataTask = self as? DataTask else { return }
        while var delivery = engine.multipart, !delivery.pending.isEmpty, !engine.machine.awaitingDecision, !isDone {
            let event = delivery.pending.removeFirst()
            engine.multipart = delivery
            switch event {
            case .data(let bytes):
                DelegateDispatch.notify(dataDelegates) { $0.dataTask(dataTask, didReceive: bytes) }
            case .part(let fields):
                let head = HTTPResponseHead(status: delivery.status, version: delivery.version, headerFields: fields)
                askAboutPart(head, of: dataTask)
            }
        }
    }

    /// Asks the delegate about a part, as about a response: allow goes on, cancel cancels.
    private func askAboutPart(_ head: HTTPResponseHead, of dataTask: DataTask) {
        askAboutResponse(head, of: dataTask) { [self] disposition in
            switch disposition {
            case .cancel:
                cancel()
            case .becomeDownload, .becomeStream:
                fail(SessionError(
                    .unsupportedOperation, engine.request?.url,
                    "a part of a multipart/x-mixed-replace response cannot become a download or a stream"
                ))
            case .allow, .unanswered:
                drainMultipart()
                releaseHeld()
                if !engine.machine.isSuspended, !engine.machine.awaitingDecision { setReadDemand(true) }
            }
        }
    }
}
