public import Foundation
public import TollgateHTTP

extension CacheStore {
    /// Keeps the first `length` bytes of a response's body, read from the file at `path`, as a
    /// piece of it — for a download that went on from resume data: its own file holds the bytes
    /// before the offset even when the cache does not (they were stored by another process that
    /// was killed, or evicted), and with them the 206 of the rest combines into a complete entry.
    ///
    /// `response` is that 206: its Content-Range gives the whole length, its validator must be
    /// the one the pieces held share (the request that got it carried `If-Range` with it), and
    /// `replacementFields` the fields the `willCacheResponse` answer chose for it. Nil when the
    /// bytes cannot be kept (see ``beginPiece(key:request:response:requestTime:responseTime:)``).
    /// Blocking (reads the file, writes the piece, one LMDB write).
    public func keepLeadingPiece(
        key: CacheKey,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        replacementFields: HeaderFields?,
        fromFile path: String,
        length: Int64,
        requestTime: Date,
        responseTime: Date
    ) throws -> PartialPieceWriter.Outcome? {
        guard length > 0, response.status == 206,
            let total = response.headerFields[CacheRules.contentRangeField].flatMap(ContentRange.init(fieldValue:))?.completeLength,
            length < total
        else { return nil }
        // Made whole meanwhile (the cut transfer's own prefix, salvaged off the loop): no copy.
        if let validator = CacheRules.combiningValidator(of: response.headerFields),
            let settled = settledByWholeEntry(key: key, validator: validator, completeLength: total)
        {
            return settled
        }
        var leading = response
        leading.headerFields.replaceOrAdd(name: CacheRules.contentRangeField, value: "bytes 0-\(length - 1)/\(total)")
        leading.headerFields.replaceOrAdd(name: .contentLength, value: String(length))
        guard let piece = try beginPiece(key: key, request: request, response: leading, requestTime: requestTime, responseTime: responseTime)
        else { return nil }
        if let replacementFields { piece.replaceHeaderFields(replacementFields) }
        do {
            try BodyFiles.forEachChunk(ofFileAt: path, length: length) { try piece.append($0) }
            return try piece.finish()
        } catch {
            piece.abort()
            throw error
        }
    }
}
