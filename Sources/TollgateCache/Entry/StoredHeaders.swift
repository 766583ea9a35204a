public import TollgateHTTP

/// Which response header fields a cache keeps and which it must not (RFC 9111 §3.1, §3.2).
///
/// Dropped from the stored copy:
/// - hop-by-hop fields: Connection and the fields it names, Keep-Alive, Proxy-Connection,
///   TE, Transfer-Encoding, Trailer, Upgrade, Proxy-Authenticate, Proxy-Authentication-Info
///   (they describe one connection or the next proxy hop, not the resource);
/// - Set-Cookie and Set-Cookie2: a cookie is for the client whose request produced the
///   response, never for the next client a shared cache serves (that first client still
///   gets it, since the stored copy is not what is sent to it) — unless the cache is set to
///   keep them (`cache.set-cookie: store`, ``CacheRules/storesSetCookie``), as RFC 9111 §3.1
///   allows;
/// - in a shared cache, the fields a `private="…"` directive lists (§5.2.2.7).
public enum StoredHeaders {
    /// Fields never stored, lowercased.
    public static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "trailer", "upgrade",
        "proxy-authenticate", "proxy-authentication-info",
    ]

    /// Cookie-setting fields, stripped from every stored copy.
    public static let cookieFields: Set<String> = ["set-cookie", "set-cookie2"]

    /// Fields a 304 may not change in the stored response (§3.2, and those the stored body
    /// depends on: its length, coding, type and range).
    public static let notUpdatedBy304: Set<String> = [
        "content-length", "content-encoding", "content-type", "content-range", "transfer-encoding",
    ]

    /// The fields to store from `fields`, and the names of the fields stripped that a
    /// client would otherwise have seen (for Cache-Status details), lowercased.
    public static func filter(
        _ fields: HeaderFields, shared: Bool, keepsCookies: Bool = false
    ) -> (fields: HeaderFields, stripped: [String]) {
        let connectionOptions = ConnectionOptions(fieldValues: fields.values(for: .connection)).options
        var privateFields: [String] = []
        if shared, case .listed(let names)? = CacheControl(fieldValues: fields.values(for: .cacheControl)).private {
            privateFields = names
        }
        var result = fields
        var stripped: [String] = []
        result.removeAll { field in
            let name = field.name.lowercased()
            if hopByHop.contains(name) || connectionOptions.contains(name) { return true }
            if (!keepsCookies && cookieFields.contains(name)) || privateFields.contains(name) {
                if !stripped.contains(name) { stripped.append(name) }
                return true
            }
            return false
        }
        return (result, stripped)
    }
}
