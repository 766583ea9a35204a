import NIOHPACK
import TollgateHTTP

/// Our HTTP heads as HTTP/2 header blocks and back (RFC 9113 §8.3): pure functions, so they are
/// tested without a connection.
enum HTTP2Heads {
    /// Fields that belong to one HTTP/1.1 connection and must not appear in HTTP/2 (RFC 9113 §8.2.2).
    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
    ]

    /// The request's header block: `:method`, `:scheme`, `:authority` (the `Host` field, else the
    /// URL's), `:path`, then its fields in lower case, without the connection-specific ones (and
    /// those `Connection` names), and `TE` only as `trailers`.
    static func requestHeaders(_ head: HTTPRequestHead) -> HPACKHeaders {
        let fields = head.headerFields
        var named: Set<String> = []
        for value in fields.values(for: .connection) {
            for element in FieldList.elements([value]) { named.insert(element.lowercased()) }
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(fields.count + 4)
        headers.add(name: ":method", value: head.method.rawValue)
        headers.add(name: ":scheme", value: head.url.scheme)
        headers.add(name: ":authority", value: fields[.host] ?? head.url.authority)
        // CONNECT is not sent as a stream (tunnels are HTTP/1.1 connections); OPTIONS * keeps "*".
        headers.add(name: ":path", value: head.url.pathAndQuery.isEmpty ? "/" : head.url.pathAndQuery)
        for field in fields {
            let name = field.name.lowercased()
            if connectionSpecific.contains(name) || named.contains(name) { continue }
            if name == "te" {
                if field.value.lowercased().contains("trailers") { headers.add(name: "te", value: "trailers") }
                continue
            }
            headers.add(name: name, value: field.value)
        }
        return headers
    }

    /// How many bytes the header block takes before compression (the request-head size metric).
    static func size(of headers: HPACKHeaders) -> Int {
        headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// A response header block as our head (`HTTP/2`, the status from `:status`, the other
    /// pseudo-fields left out); nil when `:status` is missing or not three digits.
    static func responseHead(_ headers: HPACKHeaders) -> HTTPResponseHead? {
        guard let text = headers.first(name: ":status"), text.utf8.count == 3, let status = Int(text),
            (100...999).contains(status)
        else { return nil }
        var fields = HeaderFields()
        fields.reserveCapacity(headers.count)
        for (name, value, _) in headers where !name.hasPrefix(":") {
            fields.add(name: name, value: value)
        }
        return HTTPResponseHead(status: status, version: "HTTP/2", headerFields: fields)
    }
}
