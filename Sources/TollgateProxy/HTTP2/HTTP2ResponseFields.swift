import NIOHPACK
import TollgateHTTP

/// A response head as an HTTP/2 header block (RFC 9113 §8.3.2): `:status` first, then the
/// response's fields and the proxy's own, names in lowercase, without the connection-specific
/// fields (§8.2.2: Connection and what it names, Keep-Alive, Proxy-Connection,
/// Transfer-Encoding, Upgrade) and without the other hop-by-hop ones the HTTP/1.1 writer leaves
/// out (``HopByHopHeaders``).
///
/// Pure.
enum HTTP2ResponseFields {
    /// The header block of `head`, with `added` (the proxy's fields) after its own. (What an
    /// ``HopByHopHeaders/Omission`` would leave out is left out here anyway.)
    static func block(_ head: HTTPResponseHead, adding added: HeaderFields = HeaderFields()) -> HPACKHeaders {
        var block = HPACKHeaders()
        block.reserveCapacity(head.headerFields.count + added.count + 1)
        block.add(name: ":status", value: String(head.status))
        // What Connection names, collected once.
        var named: Set<String> = []
        head.headerFields.forEachValue(named: .connection) { value in
            FieldList.forEachToken(in: value) { named.insert($0.lowercased()) }
        }
        for fields in [head.headerFields, added] {
            for field in fields {
                let name = field.name.lowercased()
                if HopByHopHeaders.fixedLowercased.contains(name) || named.contains(name) { continue }
                block.add(name: name, value: field.value)
            }
        }
        return block
    }
}

extension HopByHopHeaders {
    /// ``fixed`` in lowercase, as HTTP/2 writes names.
    static let fixedLowercased: Set<String> = Set(fixed.map { $0.lowercased() })
}
