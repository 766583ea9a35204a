internal import COpenSSL

/// Process-wide OpenSSL settings.
public enum OpenSSLLibrary {
    /// Initializes OpenSSL without its exit-time cleanup.
    ///
    /// By default OpenSSL frees its global state (error queues, algorithm tables) from an
    /// `atexit` handler. A process that exits while another thread still uses TLS — an event loop
    /// tearing down a connection while `tollgate trust pin` exits after a refused connect, or
    /// `serve` exiting with connections open — then crashes in that thread (SIGSEGV). Without
    /// the cleanup the kernel reclaims the memory as for any exiting process.
    ///
    /// Only the process's first OpenSSL initialization decides this, so it must run before any
    /// other OpenSSL call (the `tollgate` command does it first thing). Returns false if OpenSSL
    /// could not be initialized.
    @discardableResult
    public static func initializeWithoutExitCleanup() -> Bool {
        OPENSSL_init_ssl(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }

    /// Whether OpenSSL can be used: false once its cleanup has run. Initializes OpenSSL (with
    /// its defaults) when nothing else has yet.
    public static var isUsable: Bool {
        OPENSSL_init_ssl(0, nil) == 1
    }
}
