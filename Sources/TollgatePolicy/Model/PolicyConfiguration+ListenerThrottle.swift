extension PolicyConfiguration.Listener {
    /// A slower network between the listener and its clients (`throttle`): what Chrome's
    /// DevTools, Charles and Proxyman call network throttling, for a developer trying an app on a
    /// phone's connection. Every connection of the listener gets the whole of each rate, as
    /// nginx's `limit_rate` gives each connection its own.
    public struct Throttle: Hashable, Sendable {
        /// Bytes a second the listener sends to each client (`download`); nil: not limited.
        /// Paced by the kernel (`SO_MAX_PACING_RATE`), ciphertext of a TLS listener included.
        public var download: Int64?
        /// Bytes a second the listener reads from each client (`upload`); nil: not limited.
        public var upload: Int64?
        /// The round trip added to each client's (`latency`): what a client sends reaches the
        /// proxy this much later, so every answer starts this much later. Default: zero.
        public var latency: Duration = .zero

        /// No throttling.
        public init(download: Int64? = nil, upload: Int64? = nil, latency: Duration = .zero) {
            self.download = download
            self.upload = upload
            self.latency = latency
        }

        /// The largest `download` the kernel paces (a 32-bit count of bytes a second).
        public static let maximumDownload = Int64(Int32.max)
        /// The slowest rate accepted: slower, a request's head alone would take seconds.
        public static let minimumRate: Int64 = 1_000
        /// The longest latency accepted.
        public static let maximumLatency: Duration = .seconds(30)
    }
}
