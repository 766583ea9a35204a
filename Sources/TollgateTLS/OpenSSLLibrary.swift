internal import COpenSSL
internal import COpenSSLProcess

/// Process-wide OpenSSL settings.
///
/// Every program linking TollgateTLS initializes OpenSSL's base when it loads (a C constructor in
/// `COpenSSLProcess`, before `main` and so before any other OpenSSL call) with
/// `OPENSSL_INIT_NO_ATEXIT`; the rest (configuration file, TLS) still loads at the first TLS use.
/// By default OpenSSL frees its global state (error queues, algorithm tables) from an `atexit`
/// handler; a process that exits while another thread still uses TLS — an event loop tearing
/// down a connection as `tollgate trust pin` exits after a refused connect, `serve` exiting with
/// connections open, a test process ending — then crashes in that thread (SIGSEGV). Without the cleanup the kernel reclaims the memory, as for any exiting
/// process.
public enum OpenSSLLibrary {
    /// Whether the load-time initialization without exit cleanup succeeded.
    public static var initializedWithoutExitCleanup: Bool {
        tollgate_openssl_initialized_at_load() == 1
    }

    /// Whether OpenSSL can be used: false once its cleanup has run.
    public static var isUsable: Bool {
        OPENSSL_init_ssl(0, nil) == 1
    }
}
