// OpenSSL's process-wide initialization, made when the program loads (before main and before any
// other OpenSSL call, since only the first initialization decides): without OpenSSL's atexit
// cleanup. That cleanup frees OpenSSL's global state while other threads may still be using TLS
// (an event loop tearing down a connection as a command exits), and they then crash. Every
// program linking TollgateTLS gets this: the `tollgate` command and the test processes alike.
// Only OpenSSL's base is initialized here (~10 µs): the configuration file and the TLS library
// are loaded at the first TLS use, as before, not at every command's start (~0.5 ms).
#include <openssl/crypto.h>
#include "openssl_process.h"

static int initialized_at_load;

__attribute__((constructor)) static void tollgate_openssl_without_exit_cleanup(void) {
    initialized_at_load = OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) == 1;
}

int tollgate_openssl_initialized_at_load(void) {
    return initialized_at_load;
}
