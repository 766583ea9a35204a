import NIOCore
import NIOHTTP1
import TollgateHTTP

/// Conversions between Tollgate's HTTP value types and SwiftNIO's wire types, in one place
/// because both modules name their types `HTTPRequestHead` / `HTTPResponseHead`.
enum WireConversions {
    /// The head to write for `request`: origin-form, or absolute-form through a proxy; Host first
    /// when the request has none; framing headers set from the body.
    static func requestHead(
        for head: TollgateHTTP.HTTPRequestHead,
        bodyLength: Int64?,
        hasBody: Bool,
        viaProxy: Bool
    ) -> NIOHTTP1.HTTPRequestHead {
        var headers = NIOHTTP1.HTTPHeaders()
        if !head.headerFields.contains("Host") { headers.add(name: "Host", value: head.url.authority) }
        for field in head.headerFields { headers.add(name: field.name, value: field.value) }
        if hasBody {
            if !headers.contains(name: "Content-Length") && !headers.contains(name: "Transfer-Encoding") {
                if let bodyLength {
                    headers.add(name: "Content-Length", value: String(bodyLength))
                } else {
                    headers.add(name: "Transfer-Encoding", value: "chunked")
                }
            }
        } else if [.post, .put, .patch].contains(head.method), !headers.contains(name: "Content-Length") {
            // A request with these methods and no body says so explicitly (RFC 9110 §8.6).
            headers.add(name: "Content-Length", value: "0")
        }
        let target = viaProxy ? head.url.absoluteString : head.url.pathAndQuery
        return NIOHTTP1.HTTPRequestHead(
            version: .http1_1,
            method: NIOHTTP1.HTTPMethod(rawValue: head.method.rawValue),
            uri: target,
            headers: headers
        )
    }

    /// Tollgate's response head from the wire's.
    static func responseHead(_ head: NIOHTTP1.HTTPResponseHead) -> TollgateHTTP.HTTPResponseHead {
        var fields = HeaderFields()
        for (name, value) in head.headers { fields.add(name: name, value: value) }
        return TollgateHTTP.HTTPResponseHead(
            status: Int(head.status.code),
            reason: head.status.reasonPhrase,
            version: "HTTP/\(head.version.major).\(head.version.minor)",
            headerFields: fields
        )
    }
}
