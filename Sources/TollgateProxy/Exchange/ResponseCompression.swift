import TollgateCache
import TollgateHTTP
import TollgatePolicy

/// Whether a response goes to the client compressed, with Brotli or gzip (`hosts[].compress`), and
/// what its header fields become: nginx's `gzip` filter with `gzip_vary on`, and its `brotli`
/// module's. Pure.
enum ResponseCompression {
    /// What is done to one response.
    enum Verdict: Equatable {
        /// Nothing: the rule does not compress it.
        case none
        /// Sent as it is, but its representation depends on `Accept-Encoding` (a client that
        /// accepts a coding would get it compressed): `Vary: Accept-Encoding` is added for caches
        /// downstream.
        case varyOnly
        /// Compressed with this coding (`br` or `gzip`).
        case compressed(String)
    }

    /// The statuses compressed: nginx's (a page, and the pages of errors people see).
    private static let statuses: Set<Int> = [200, 403, 404]

    /// The verdict for a response of `status` with `responseFields` to a request with
    /// `requestFields`, under `rule`.
    static func verdict(rule: HostRule.Compression?, requestFields: HeaderFields, status: Int, responseFields: HeaderFields) -> Verdict {
        guard let rule, statuses.contains(status) else { return .none }
        // Already coded (identity aside), a range of the bytes, or forbidden by either side
        // (RFC 9110 §7.7, RFC 9111 §5.2.1.6 and §5.2.2.6).
        let codings = FieldList.elements(responseFields.values(for: .contentEncoding)).filter { $0.lowercased() != "identity" }
        guard codings.isEmpty, !responseFields.contains("Content-Range"),
            !CacheControl(cacheControlLinesOf: responseFields).noTransform,
            !CacheControl(cacheControlLinesOf: requestFields).noTransform
        else { return .none }
        guard let type = responseFields[.contentType], rule.compresses(contentType: type) else { return .none }
        if let length = responseFields[.contentLength].flatMap({ Int64($0) }), length < rule.minimumSize { return .none }
        return ContentNegotiation.preferredCoding(requestFields.values(for: "Accept-Encoding"), among: rule.encodings)
            .map(Verdict.compressed) ?? .varyOnly
    }

    /// The fields a response is sent with under `verdict`: compressed, it is `Content-Encoding:
    /// br` or `gzip` without `Content-Length` (the connection frames it), its strong `ETag` made weak (the
    /// bytes are not the origin's, though they mean the same), and without the fields about its
    /// bytes (`Accept-Ranges`, `Content-MD5`, the digests of RFC 9530).
    static func apply(_ verdict: Verdict, to fields: inout HeaderFields) {
        guard verdict != .none else { return }
        let varied = FieldList.elements(fields.values(for: .vary)).map { $0.lowercased() }
        if !varied.contains("accept-encoding"), !varied.contains("*") {
            fields.add(name: .vary, value: "Accept-Encoding")
        }
        guard case .compressed(let coding) = verdict else { return }
        fields.remove(.contentEncoding)
        fields.add(name: .contentEncoding, value: coding)
        fields.remove(.contentLength)
        for name in ["Accept-Ranges", "Content-MD5", "Content-Digest", "Repr-Digest"] { fields.remove(name) }
        if let etag = fields[.eTag], etag.hasPrefix("\"") {
            fields.remove(.eTag)
            fields.add(name: .eTag, value: "W/" + etag)
        }
    }

    /// The encoder for a response compressed under `verdict` by `rule`; nil when it is not
    /// compressed, or the library cannot make an encoder (out of memory).
    static func encoder(for verdict: Verdict, rule: HostRule.Compression) -> (any ResponseBodyEncoder)? {
        guard case .compressed(let coding) = verdict else { return nil }
        return coding == "br" ? BrotliEncoder(quality: rule.brotliLevel) : GzipEncoder(level: rule.level)
    }
}
