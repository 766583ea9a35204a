#if canImport(Glibc)
import Glibc
#endif
import Testing
import TollgateTLS

/// OpenSSL's exit-time cleanup, seen from a handler registered before OpenSSL's own: handlers run
/// in reverse order, so this one runs after OpenSSL's would and finds OpenSSL unusable if it ran.
/// (With the cleanup, a thread still using TLS while the process exits crashes: the race the
/// setting removes, which a test can only provoke by chance.)
@Suite("OpenSSL's process-wide settings")
struct OpenSSLLibraryTests {
    @Test("Initialized without exit cleanup, OpenSSL is still usable in the last atexit handler")
    func noCleanupAtExit() async {
        await #expect(processExitsWith: .success) {
            atexit { _exit(OpenSSLLibrary.isUsable ? 0 : 3) }
            guard OpenSSLLibrary.initializeWithoutExitCleanup() else { _exit(2) }
            exit(0)
        }
    }

    @Test("With OpenSSL's defaults, its cleanup has run before the last atexit handler")
    func defaultCleansUpAtExit() async {
        await #expect(processExitsWith: .exitCode(3)) {
            atexit { _exit(OpenSSLLibrary.isUsable ? 0 : 3) }
            guard OpenSSLLibrary.isUsable else { _exit(2) }
            exit(0)
        }
    }
}
