extension PolicyConfiguration {
    /// Limits on what a client may send and how long the proxy waits (`limits`).
    public struct Limits: Hashable, Sendable {
        /// The most bytes of request line and header fields a client may send (`max-header-bytes`);
        /// past it the answer is 431. Default: 64 KiB.
        public var maxHeaderBytes: Int = 64 << 10
        /// The most header field lines in one request (`max-headers`). Default: 100.
        public var maxHeaders: Int = 100
        /// A client slower than this sending its request head is cut off (`header-read-timeout`).
        /// Default: 10 s.
        public var headerReadTimeout: Duration = .seconds(10)
        /// A keep-alive client connection with no request for this long is closed
        /// (`client-idle-timeout`). Default: 15 s.
        public var clientIdleTimeout: Duration = .seconds(15)
        /// A client whose socket stays full — taking too little of a response for the proxy to
        /// write more — for this long is closed (`client-send-timeout`, nginx's `send_timeout`).
        /// Default: 60 s.
        public var clientSendTimeout: Duration = .seconds(60)
        /// The longest wait for an upstream connect, first byte, or next byte (`upstream-timeout`).
        /// Default: 10 s.
        public var upstreamTimeout: Duration = .seconds(10)
        /// The largest WebSocket message the proxy relays, its fragments counted together
        /// (`websocket-max-message`); a larger one closes both sides with 1009. Default: 16 MiB.
        public var websocketMaxMessage: Int = 16 << 20
        /// How much of a request body is kept to be sent again (`resendable-body`: a followed
        /// 307 or 308, an answered 401, a refused stream): the first 256 KiB in memory, the rest
        /// in a temporary file. A larger body is not kept, and the client gets the 307 or 401.
        /// Default: 64 MiB.
        public var resendableBody: Int64 = 64 << 20
        /// A relayed WebSocket connection with no frame either way for this long is closed with
        /// 1001 on both sides (`websocket-idle-timeout`). Default: 10 minutes.
        public var websocketIdleTimeout: Duration = .seconds(600)
        /// A CONNECT tunnel (or an upgraded connection other than WebSocket) with no byte either
        /// way for this long is closed on both sides (`tunnel-idle-timeout`), as Squid's
        /// `read_timeout` closes one. Default: 15 minutes.
        public var tunnelIdleTimeout: Duration = .seconds(900)
        /// The most streams an HTTP/2 client may have open at once on one connection
        /// (`http2-max-concurrent-streams`, SETTINGS_MAX_CONCURRENT_STREAMS); a client that opens
        /// more gets GOAWAY PROTOCOL_ERROR (its open streams finish). Default: 100.
        public var http2MaxConcurrentStreams: Int = 100
        /// The largest header list an HTTP/2 client may send (`http2-max-header-list-size`,
        /// SETTINGS_MAX_HEADER_LIST_SIZE); a larger header block ends the connection. Default: 64 KiB.
        public var http2MaxHeaderListSize: Int = 64 << 10
        /// The most streams an HTTP/2 client may reset per 30 seconds on one connection
        /// (`http2-max-resets`); past it the connection is ended with GOAWAY ENHANCE_YOUR_CALM
        /// (rapid reset, CVE-2023-44487). Default: 200.
        public var http2MaxResets: Int = 200

        /// Limits with every field at its default.
        public init() {}
    }

    /// Logging (`log`).
    public struct Log: Hashable, Sendable {
        /// Where access log lines go.
        public enum Destination: Hashable, Sendable, CustomStringConvertible {
            /// Standard error (`stderr`).
            case standardError
            /// Standard output (`stdout`).
            case standardOutput
            /// Nowhere (`off`).
            case off
            /// Appended to this file (any other value; `~` expanded, relative to the file's directory).
            case file(String)

            public var description: String {
                switch self {
                case .standardError: "stderr"
                case .standardOutput: "stdout"
                case .off: "off"
                case .file(let path): path
                }
            }
        }

        /// The access log line format.
        public enum Format: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// The Apache/nginx combined log format.
            case combined
            /// One JSON object per line.
            case json

            public var description: String { rawValue }
        }

        /// The least severe message logged, swift-log's levels.
        public enum Level: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            case trace, debug, info, notice, warning, error, critical

            public var description: String { rawValue }
        }

        /// Where the access log goes (`access`). Default: standard error.
        public var access: Destination = .standardError
        /// The access log's line format (`format`). Default: combined.
        public var format: Format = .combined
        /// The diagnostic log's level (`level`). Default: info.
        public var level: Level = .info
        /// How many recent exchanges the admin API keeps for `GET /har` and the live view
        /// (`har-entries`); 0 keeps none. Default: 1000.
        public var harEntries = 1000

        /// A log setting with every field at its default.
        public init() {}
    }
}
