import NIOCore
import TollgateHTTP

/// A Range request the cache fetched whole (``TollgateCache/CacheRules/rangeOffsetLimit``):
/// the whole 200 streams into storage, and the task receives only the bytes of its range.
struct RangeCut {
    /// The task's own request, with its Range and If-Range.
    let request: HTTPRequestHead
    /// Bytes still to drop before the range starts.
    var skip: Int64 = 0
    /// Bytes of the range still to hand on.
    var take: Int64 = 0

    init(request: HTTPRequestHead) { self.request = request }

    /// The part of the next body piece inside the range; nil when none of it is.
    mutating func cut(_ buffer: ByteBuffer) -> ByteBuffer? {
        var piece = buffer
        let dropped = Int(min(skip, Int64(piece.readableBytes)))
        piece.moveReaderIndex(forwardBy: dropped)
        skip -= Int64(dropped)
        let kept = Int(min(take, Int64(piece.readableBytes)))
        take -= Int64(kept)
        guard kept > 0 else { return nil }
        return piece.getSlice(at: piece.readerIndex, length: kept)
    }
}

extension HTTPResponseHead {
    /// This 200's head as the 206 for `range` of a body `length` bytes long.
    func partialContent(_ range: Range<Int64>, of length: Int64) -> HTTPResponseHead {
        var fields = headerFields
        fields.replaceOrAdd(name: "Content-Range", value: ContentRange(range: range, completeLength: length).description)
        fields.replaceOrAdd(name: .contentLength, value: String(range.count))
        return HTTPResponseHead(status: 206, reason: "Partial Content", version: version, headerFields: fields)
    }

    /// A 416 for a body `length` bytes long, with this response's validators and dates.
    func rangeNotSatisfiable(length: Int64) -> HTTPResponseHead {
        var fields = HeaderFields()
        for name in ["Date", "ETag", "Last-Modified", "Cache-Control", "Expires", "Age"] {
            for value in headerFields.values(for: name) { fields.add(name: name, value: value) }
        }
        fields.add(name: "Content-Range", value: ContentRange(range: nil, completeLength: length).description)
        fields.add(name: .contentLength, value: "0")
        return HTTPResponseHead(status: 416, reason: "Range Not Satisfiable", version: version, headerFields: fields)
    }
}
