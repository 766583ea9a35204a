#ifndef TOLLGATE_OPENSSL_PROCESS_H
#define TOLLGATE_OPENSSL_PROCESS_H

/// 1 when OpenSSL was initialized at program load without its exit-time cleanup
/// (`OPENSSL_INIT_NO_ATEXIT`), 0 if that initialization failed.
int tollgate_openssl_initialized_at_load(void);

#endif
