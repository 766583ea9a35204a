import TollgateHTTP

/// A request head as the client sent it, checked by ``RequestDecoder``: one request line, field
/// lines with nothing a downstream parser could read two ways, and a single unambiguous body
/// framing.
struct ClientRequestHead: Hashable, Sendable {
    /// How the request body is delimited (RFC 9112 §6.3).
    enum Framing: Hashable, Sendable {
        /// No body.
        case none
        /// Exactly this many bytes (`Content-Length`).
        case length(Int64)
        /// `Transfer-Encoding: chunked`.
        case chunked
    }

    // One copy-on-write box: the head is copied into the exchange, its record and the task's
    // request, and a copy is then one retain.
    private struct Parts: Hashable, Sendable {
        var method: String
        var target: String
        var minorVersion: Int
        var headerFields: HeaderFields
        var framing: Framing
        var byteCount: Int
        /// Read from the fields once: asked several times per exchange (``wantsKeepAlive``, ``isUpgrade``).
        var wantsKeepAlive: Bool
        var isUpgrade: Bool
        /// Received on an HTTP/2 stream (``HTTP2RequestMapping``), not as HTTP/1.x bytes.
        var isHTTP2: Bool
    }

    @CopyOnWrite private var parts: Parts

    /// The method token, case-sensitive.
    var method: String {
        _read { yield parts.method }
        _modify { yield &parts.method }
    }

    /// The request target exactly as sent (origin-, absolute- or authority-form, or `*`).
    var target: String {
        _read { yield parts.target }
        _modify { yield &parts.target }
    }

    /// The minor version of HTTP/1.x (0 or 1).
    /// (Not settable, nor are the fields: what is read from them at creation stays true.)
    var minorVersion: Int { parts.minorVersion }

    /// The field lines in order, values trimmed of surrounding whitespace.
    var headerFields: HeaderFields {
        _read { yield parts.headerFields }
    }

    /// How the body is delimited.
    var framing: Framing {
        _read { yield parts.framing }
        _modify { yield &parts.framing }
    }

    /// The bytes of the request line and field lines, final empty line included.
    var byteCount: Int {
        _read { yield parts.byteCount }
        _modify { yield &parts.byteCount }
    }

    init(
        method: String,
        target: String,
        minorVersion: Int,
        headerFields: HeaderFields,
        framing: Framing,
        byteCount: Int,
        isHTTP2: Bool = false
    ) {
        _parts = CopyOnWrite(
            wrappedValue: Parts(
                method: method,
                target: target,
                minorVersion: minorVersion,
                headerFields: headerFields,
                framing: framing,
                byteCount: byteCount,
                wantsKeepAlive: !headerFields.listContains(.connection, token: "close")
                    && (minorVersion >= 1 || headerFields.listContains(.connection, token: "keep-alive")),
                isUpgrade: headerFields.contains(.upgrade) && headerFields.listContains(.connection, token: "upgrade"),
                isHTTP2: isHTTP2
            )
        )
    }

    /// `HTTP/1.0`, `HTTP/1.1`, or `HTTP/2.0` for a request of an HTTP/2 stream.
    var versionText: String { parts.isHTTP2 ? "HTTP/2.0" : "HTTP/1.\(minorVersion)" }

    /// Whether the request came on an HTTP/2 stream (its ``minorVersion`` is then 1: what the
    /// exchange decides by a version, such as chunked framing or `100 Continue`, holds for it).
    var isHTTP2: Bool { parts.isHTTP2 }

    var isConnect: Bool { method == "CONNECT" }
    var isHead: Bool { method == "HEAD" }

    /// Whether a body follows the head.
    var hasBody: Bool {
        switch framing {
        case .none, .length(0): false
        case .length, .chunked: true
        }
    }

    /// Whether the client asked to switch protocols (`Upgrade` named in `Connection`).
    var isUpgrade: Bool { parts.isUpgrade }

    /// Whether the client waits for `100 Continue` before sending its body.
    var expectsContinue: Bool {
        headerFields[.expect]?.equalsIgnoringASCIICase("100-continue") ?? false
    }

    /// Whether the client wants the connection kept open after this exchange (RFC 9112 §9.3).
    var wantsKeepAlive: Bool { parts.wantsKeepAlive }
}
