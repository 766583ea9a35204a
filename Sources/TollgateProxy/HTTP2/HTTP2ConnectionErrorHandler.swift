import NIOCore
import NIOHTTP2

/// The last handler of an HTTP/2 client connection: closes it after a connection error (NIO has
/// sent GOAWAY, and reads no more frames): too many stream resets (rapid reset), a CONTINUATION
/// flood, a header block too large, a frame that does not parse, a bad preface, or an I/O error.
/// A stream's error (NIO reset that stream) leaves the connection open.
///
/// The close after a GOAWAY lingers (nginx's `lingering_close`): the output is shut first, so
/// that the GOAWAY goes out followed by a FIN, and what the client still sends is read and
/// dropped for ``lingerTime`` (or until it closes) before the socket is closed. Closed at once
/// with the client's bytes unread, the kernel would send a reset instead — discarding the GOAWAY
/// if it was still queued — and a client still writing its oversized header block would get
/// `ECONNRESET` without ever reading why.
///
/// More streams than `http2-max-concurrent-streams` at once is a connection error too (NIO sends
/// GOAWAY, PROTOCOL_ERROR, naming the last stream it took), but the streams it took are served:
/// the connection closes as soon as the last of them ends, not at the idle timeout. Runs on the
/// connection's event loop.
final class HTTP2ConnectionErrorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    /// What the connection's streams share (which counts them).
    private let front: HTTP2FrontConnection
    /// The output is shut after a connection error; the socket closes at ``lingerTime``.
    private var lingering = false

    /// How long the connection reads and drops the client's bytes after a connection error.
    static let lingerTime: TimeAmount = .seconds(2)

    init(front: HTTP2FrontConnection) {
        self.front = front
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOHTTP2Errors.MaxStreamsViolation {
            let channel = context.channel
            front.closeWhenStreamsEnd { channel.close(promise: nil) }
            return
        }
        guard Self.endsConnection(error), !lingering else { return }
        guard error is any NIOHTTP2Error else {
            context.close(promise: nil)  // an I/O error: the connection is gone already
            return
        }
        lingering = true
        let channel = context.channel
        context.close(mode: .output, promise: nil)
        channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
    }

    /// Whether `error`, reported by `NIOHTTP2Handler`, ended the connection.
    static func endsConnection(_ error: any Error) -> Bool {
        switch error {
        case is NIOHTTP2Errors.ExcessiveRSTFrames, is NIOHTTP2Errors.ExcessiveContinuationFrames,
            is NIOHTTP2Errors.ExcessiveControlFrames, is NIOHTTP2Errors.ExcessiveEmptyDataFrames,
            is NIOHTTP2Errors.ExcessiveNumberOfGlitches, is NIOHTTP2Errors.ExcessiveStreamErrors,
            is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock, is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering,
            is NIOHTTP2Errors.UnableToParseFrame, is NIOHTTP2Errors.BadClientMagic, is NIOHTTP2Errors.MissingPreface,
            is NIOHTTP2Errors.FlowControlViolation, is NIOHTTP2Errors.ReceivedBadSettings,
            is NIOHTTP2Errors.InvalidFlowControlWindowSize, is NIOHTTP2Errors.StreamIDTooSmall,
            is NIOHTTP2Errors.InvalidStreamIDForPeer:
            return true
        case is any NIOHTTP2Error, is NIOHTTP2Errors.StreamError:
            // A stream error: NIO reset the stream.
            return false
        default:
            // I/O errors and anything else: the connection is gone.
            return true
        }
    }
}
