import NIOCore
import TollgateHTTP

/// Turns a response into the buffers an HTTP/1.1 connection writes: the head with the
/// connection's own `Connection` field, the body in its framing (chunks, or bytes as they are),
/// the end. No I/O: each call returns what to write, and the handler writes it — so a write that
/// calls back into the handler (writability) never finds the writer in the middle of a change.
///
/// What it saves per response on a kept-alive connection: a head of a body of known length is
/// held and leaves with the first body piece, in one buffer when the piece is small (one write
/// through the pipeline and one iovec: a 1 KiB cache hit is mostly head); the head's buffer and
/// the list of the proxy's added fields are kept for the next response.
struct ResponseWriter {
    /// Bodies up to this size are copied behind a held head rather than written on their own.
    static let coalescedBodyLimit = 4 * 1024
    /// Response buffers up to this capacity are kept for the next response.
    static let spareBufferLimit = 8 * 1024

    /// How the current response's body is delimited.
    private(set) var framing = ResponseFraming.none
    /// The encoded head of a response whose body has a known length, not yet written.
    private var heldHead: ByteBuffer?
    /// The last response head's buffer, kept for the next response.
    private var spareResponseBuffer: ByteBuffer?
    /// The last response's list of proxy-added fields, kept for the next.
    private var spareAddedFields = HeaderFields()

    /// What to write for a body piece.
    enum BodyWrite {
        /// Nothing (a response without a body).
        case nothing
        /// A chunk: its size line, the piece, and the CRLF after it (flushed).
        case chunk(header: ByteBuffer, piece: ByteBuffer)
        /// One buffer, flushed: the piece, or the held head with the piece behind it.
        case one(ByteBuffer)
        /// The held head, then the piece (flushed).
        case headThenPiece(head: ByteBuffer, piece: ByteBuffer)
    }

    /// An empty list for the fields the proxy adds to a response, in the storage of the last
    /// response's: a list per response was an allocation per response.
    mutating func takeAddedFields() -> HeaderFields {
        var fields = HeaderFields()
        swap(&fields, &spareAddedFields)
        fields.removeAll(keepingCapacity: true)
        return fields
    }

    /// Encodes an interim response head.
    func interim(_ head: HTTPResponseHead, minorVersion: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 128)
        ResponseEncoder.head(head, minorVersion: minorVersion, into: &buffer)
        return buffer
    }

    /// Encodes a response head with `added` after its own fields (and the connection's
    /// `Connection` field among them); returns it to be written now, or nil when it is held for
    /// the first body piece (a `.contentLength` body). `added`'s storage is kept for the next
    /// response.
    mutating func head(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        omitting omission: HopByHopHeaders.Omission?,
        framing: ResponseFraming,
        bodyLength: Int64?,
        minorVersion: Int,
        willClose: Bool,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer? {
        defer { spareAddedFields = added }
        added.remove(.connection)
        if willClose {
            added.add(name: .connection, value: "close")
        } else if minorVersion == 0 {
            added.add(name: .connection, value: "keep-alive")
        }
        self.framing = framing
        // Room for a small body too: it is copied in behind the head (``body(_:allocator:)``), and
        // growing the buffer then would allocate and copy again.
        var capacity = 512
        if framing == .contentLength, let length = bodyLength, length <= Self.coalescedBodyLimit {
            capacity += Int(length)
        }
        var buffer = responseBuffer(capacity: capacity, allocator: allocator)
        // The connection's own Connection field replaces the message's (an omission always
        // leaves out `Connection`, which is among the fixed hop-by-hop names). The head is
        // copied only to take one out.
        if omission == nil, head.headerFields.contains(.connection) {
            var head = head
            head.headerFields.remove(.connection)
            ResponseEncoder.head(head, adding: added, omitting: nil, minorVersion: minorVersion, into: &buffer)
        } else {
            ResponseEncoder.head(head, adding: added, omitting: omission, minorVersion: minorVersion, into: &buffer)
        }
        // A body of known length follows, and every piece of it is flushed: the head leaves with
        // the first, without a task on the loop's queue to flush it. Heads of bodies of unknown
        // length (a stream may pause before its first byte) and of no body go out at once.
        if framing == .contentLength {
            heldHead = buffer
            return nil
        }
        keepForReuse(buffer)
        return buffer
    }

    /// What to write for a body piece (not empty).
    mutating func body(_ piece: ByteBuffer, allocator: ByteBufferAllocator) -> BodyWrite {
        switch framing {
        case .none:
            return .nothing
        case .chunked:
            var header = allocator.buffer(capacity: 16)
            ResponseEncoder.chunkHeader(piece.readableBytes, into: &header)
            return .chunk(header: header, piece: piece)
        case .contentLength, .untilClose:
            guard var head = heldHead else { return .one(piece) }
            heldHead = nil
            if piece.readableBytes <= Self.coalescedBodyLimit {
                head.writeImmutableBuffer(piece)
                keepForReuse(head)  // after the copy in: kept before, the buffer would be copied
                return .one(head)
            }
            keepForReuse(head)
            return .headThenPiece(head: head, piece: piece)
        }
    }

    /// The held head, if any, to be written ahead of whatever is written next.
    mutating func takeHeldHead() -> ByteBuffer? {
        guard let head = heldHead else { return nil }
        heldHead = nil
        keepForReuse(head)
        return head
    }

    /// The bytes that end the response after its body (the last chunk), if any.
    func end() -> ByteBuffer? {
        framing == .chunked ? ByteBuffer(staticString: "0\r\n\r\n") : nil
    }

    /// Encodes a whole response of the proxy's own; one that began is never followed by one.
    mutating func ownAnswer(_ head: HTTPResponseHead, body: ByteBuffer, minorVersion: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        ResponseEncoder.head(head, minorVersion: minorVersion, into: &buffer)
        var body = body
        buffer.writeBuffer(&body)
        heldHead = nil
        framing = .none
        return buffer
    }

    /// Forgets the response in progress (the connection starts over inside an intercepted CONNECT).
    mutating func reset() {
        framing = .none
    }

    /// A buffer for a response head: the last one's again when the socket has taken all of it
    /// (NIO then holds no reference, and clearing it keeps its storage), so a kept-alive
    /// connection does not allocate one per response; otherwise a new one.
    private mutating func responseBuffer(capacity: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard var buffer = spareResponseBuffer else { return allocator.buffer(capacity: capacity) }
        spareResponseBuffer = nil  // so that `buffer` is the only reference when NIO let go
        buffer.clear(minimumCapacity: capacity)
        return buffer
    }

    /// Keeps a response buffer about to be handed to NIO for ``responseBuffer(capacity:allocator:)``.
    private mutating func keepForReuse(_ buffer: ByteBuffer) {
        if buffer.capacity <= Self.spareBufferLimit { spareResponseBuffer = buffer }
    }
}
