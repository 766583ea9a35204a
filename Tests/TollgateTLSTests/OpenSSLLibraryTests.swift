import Testing
import TollgateTLS

#if canImport(Glibc)
import Glibc
#endif

/// OpenSSL's exit-time cleanup, seen from an atexit handler registered by the exiting process:
/// handlers run in reverse order of registration, and OpenSSL registers its cleanup at its first
/// initialization (later than this handler, were it not for the load-time initialization), so
/// the handler would run after the cleanup and find OpenSSL unusable. (With the cleanup, a thread
/// still using TLS while the process exits crashes: the race the setting removes, which a test
/// can only provoke by chance.)
@Suite("OpenSSL's process-wide settings")
struct OpenSSLLibraryTests {
    @Test("OpenSSL is initialized at load without exit cleanup: still usable in the last atexit handler")
    func noCleanupAtExit() async {
        await #expect(processExitsWith: .success) {
            atexit { _exit(OpenSSLLibrary.isUsable ? 0 : 3) }
            guard OpenSSLLibrary.initializedWithoutExitCleanup, OpenSSLLibrary.isUsable else { _exit(2) }
            exit(0)
        }
    }
}
