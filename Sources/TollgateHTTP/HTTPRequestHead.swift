/// The request line and header fields of an HTTP request, independent of how it is sent.
///
/// A value type whose parts live in one copy-on-write box: the head of a request is copied
/// into the task, its current request, its metrics and the cache's lookups, and each copy is
/// one retain rather than one per string and array.
public struct HTTPRequestHead: Hashable, Sendable {
    private struct Parts: Hashable, Sendable {
        var method: HTTPMethod
        var url: HTTPURL
        var headerFields: HeaderFields
    }

    @CopyOnWrite private var parts: Parts

    /// The method.
    public var method: HTTPMethod {
        _read { yield parts.method }
        _modify { yield &parts.method }
    }

    /// The absolute target URL.
    public var url: HTTPURL {
        _read { yield parts.url }
        _modify { yield &parts.url }
    }

    /// The header fields in order (Host is derived from the URL when sent, unless present).
    public var headerFields: HeaderFields {
        _read { yield parts.headerFields }
        _modify { yield &parts.headerFields }
    }

    /// Creates a request head.
    public init(method: HTTPMethod = .get, url: HTTPURL, headerFields: HeaderFields = [:]) {
        _parts = CopyOnWrite(wrappedValue: Parts(method: method, url: url, headerFields: headerFields))
    }
}
