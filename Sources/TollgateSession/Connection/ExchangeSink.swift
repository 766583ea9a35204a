import Foundation
import NIOCore
import TollgateHTTP
import NIOPosix

/// Receives what happens to one request/response exchange on an origin connection.
/// Called on the connection's event loop, in order.
protocol ExchangeSink: AnyObject, Sendable {
    func exchangeDidWriteRequestHead(bytes: Int)
    func exchangeDidWriteBody(bytes: Int)
    func exchangeDidFinishRequest()
    /// An interim (1xx) response arrived; the final head is still to come.
    func exchangeDidReceiveInterim(_ head: HTTPResponseHead)
    func exchangeDidReceiveHead(_ head: HTTPResponseHead)
    func exchangeDidReceiveBody(_ buffer: ByteBuffer)
    /// The response ended; `reusable` says whether the connection may carry another request.
    func exchangeDidReceiveEnd(reusable: Bool)
    /// The exchange failed; `responseStarted` says whether any response byte had arrived
    /// (a request that failed before that on a reused connection may be retried).
    func exchangeDidFail(_ error: SessionError, responseStarted: Bool)
}

/// Where the body of a request comes from, as the connection reads it.
enum BodySource: Sendable {
    case none
    case bytes(ByteBuffer)
    case file(path: String, size: Int64, fileIO: NonBlockingFileIO)
    case stream(BodyStream)

    /// The declared length, when it is known before sending.
    var knownLength: Int64? {
        switch self {
        case .none: 0
        case .bytes(let buffer): Int64(buffer.readableBytes)
        case .file(_, let size, fileIO: _): size
        case .stream: nil
        }
    }
}

enum FileSize {
    static func of(_ path: String) -> Int64? {
        guard let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber else { return nil }
        return size.int64Value
    }
}
