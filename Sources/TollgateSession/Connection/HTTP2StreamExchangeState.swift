import NIOCore
import NIOHTTP2
import TollgateHTTP

/// Where one exchange on an HTTP/2 stream stands, and what each frame received means for it — a
/// pure state machine run by ``HTTP2StreamHandler``.
struct HTTP2StreamExchangeState {
    enum Phase: Equatable {
        /// The stream is not open yet.
        case idle
        /// The request is (being) sent; no final response head yet (1xx ones may come).
        case awaitingHead
        /// The final head arrived; DATA (and trailers) until END_STREAM.
        case body
        /// Ended, failed or reset.
        case done
    }

    /// What a received frame means for the task.
    enum Event: Equatable {
        case interim(HTTPResponseHead)
        /// The final head; `ended` when it carried END_STREAM (no body).
        case head(HTTPResponseHead, ended: Bool)
        case body(ByteBuffer, ended: Bool)
        /// END_STREAM on trailers.
        case end
        case failed(SessionError)
        /// Nothing for the task (trailers without END_STREAM, frames after the end, WINDOW_UPDATE…).
        case ignored
    }

    private(set) var phase = Phase.idle

    /// Whether the final response head has arrived (a failure before it may be retried).
    private(set) var responseStarted = false

    /// Whether the exchange may still report to its task.
    var isRunning: Bool { phase != .done }

    /// The stream opened: send the request. False when it was already sent or the exchange is over.
    mutating func startRequest() -> Bool {
        guard phase == .idle else { return false }
        phase = .awaitingHead
        return true
    }

    /// The exchange is over (ended, failed, cancelled): later frames are ignored.
    mutating func finish() {
        phase = .done
    }

    mutating func received(_ payload: HTTP2Frame.FramePayload) -> Event {
        switch (phase, payload) {
        case (.awaitingHead, .headers(let headers)):
            guard let head = HTTP2Heads.responseHead(headers.headers) else {
                phase = .done
                return .failed(SessionError(.badServerResponse, nil, "HTTP/2 response without a valid :status"))
            }
            if (100..<200).contains(head.status) {
                guard head.status != 101, !headers.endStream else {
                    phase = .done
                    return .failed(SessionError(.badServerResponse, nil, "HTTP/2 response \(head.status) is not allowed"))
                }
                return .interim(head)
            }
            responseStarted = true
            phase = headers.endStream ? .done : .body
            return .head(head, ended: headers.endStream)
        case (.body, .headers(let trailers)):
            guard trailers.endStream else { return .ignored }
            phase = .done
            return .end
        case (.body, .data(let data)):
            guard case .byteBuffer(let buffer) = data.data else { return .ignored }
            if data.endStream { phase = .done }
            return .body(buffer, ended: data.endStream)
        case (.awaitingHead, .data):
            phase = .done
            return .failed(SessionError(.badServerResponse, nil, "HTTP/2 DATA before the response head"))
        case (.awaitingHead, .rstStream(let code)), (.body, .rstStream(let code)):
            phase = .done
            return .failed(Self.resetError(code))
        default:
            return .ignored
        }
    }

    /// The error of a stream the server reset with `code`: REFUSED_STREAM means the request was
    /// not processed (RFC 9113 §8.7), and the task may send it again whatever its method.
    static func resetError(_ code: HTTP2ErrorCode) -> SessionError {
        guard code == .refusedStream else {
            return SessionError(.networkConnectionLost, nil, "the server reset the HTTP/2 stream (\(code))")
        }
        var error = SessionError(.networkConnectionLost, nil, "the server refused the HTTP/2 stream (REFUSED_STREAM): not processed")
        error.notProcessed = true
        return error
    }

    /// Whether the stream `id` was refused by the server's GOAWAY: above its last stream id, so
    /// not processed (RFC 9113 §6.8). False while no GOAWAY came or the stream had no id yet.
    static func refusedByGoAway(stream id: HTTP2StreamID?, lastStreamID: HTTP2StreamID?) -> Bool {
        guard let id, let lastStreamID else { return false }
        return id > lastStreamID
    }
}
