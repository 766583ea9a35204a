// The OpenSSL 3 headers Tollgate uses, plus `tg_` wrappers for what Swift cannot import:
// function-like macros (most of the SSL_CTX_ctrl family, the typed STACK_OF helpers,
// OPENSSL_free) and constants built from expressions (SSL_OP_BIT, XN_FLAG_RFC2253).
// Every wrapper is a one-line pass-through; keep logic in Swift.
#ifndef TOLLGATE_COPENSSL_SHIM_H
#define TOLLGATE_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

// MARK: - Memory

static inline void tg_OPENSSL_free(void *addr) { OPENSSL_free(addr); }

// MARK: - Errors

static inline unsigned long tg_ERR_get_error(void) { return ERR_get_error(); }
static inline unsigned long tg_ERR_peek_error(void) { return ERR_peek_error(); }
static inline void tg_ERR_clear_error(void) { ERR_clear_error(); }
static inline int tg_ERR_GET_LIB(unsigned long e) { return ERR_GET_LIB(e); }
static inline int tg_ERR_GET_REASON(unsigned long e) { return ERR_GET_REASON(e); }
static inline int tg_ERR_SYSTEM_ERROR(unsigned long e) { return ERR_SYSTEM_ERROR(e); }

// MARK: - BIO

static inline long tg_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline long tg_BIO_set_mem_eof_return(BIO *b, long v) { return BIO_set_mem_eof_return(b, v); }
static inline int tg_BIO_pending(BIO *b) { return BIO_pending(b); }
static inline int tg_BIO_should_retry(BIO *b) { return BIO_should_retry(b); }
static inline int tg_BIO_should_read(BIO *b) { return BIO_should_read(b); }
static inline int tg_BIO_should_write(BIO *b) { return BIO_should_write(b); }

// MARK: - Keys

static inline EVP_PKEY *tg_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }
static inline EVP_PKEY *tg_EVP_RSA_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

// MARK: - X.509

static inline unsigned long tg_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
static inline unsigned long tg_XN_FLAG_ONELINE(void) { return XN_FLAG_ONELINE; }
static inline long tg_X509_VERSION_3(void) { return X509_VERSION_3; }
static inline int tg_MBSTRING_UTF8(void) { return MBSTRING_UTF8; }

// MARK: - STACK_OF(X509)

static inline int tg_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *tg_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline int tg_sk_X509_REVOKED_num(const STACK_OF(X509_REVOKED) *sk) { return sk_X509_REVOKED_num(sk); }
static inline STACK_OF(X509) *tg_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int tg_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
/// Frees the stack only; the certificates keep their references.
static inline void tg_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
/// Frees the stack and releases one reference on every certificate in it.
static inline void tg_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

// MARK: - STACK_OF(GENERAL_NAME)

static inline int tg_sk_GENERAL_NAME_num(const GENERAL_NAMES *sk) { return sk_GENERAL_NAME_num(sk); }
static inline GENERAL_NAME *tg_sk_GENERAL_NAME_value(const GENERAL_NAMES *sk, int i) {
    return sk_GENERAL_NAME_value(sk, i);
}
static inline GENERAL_NAMES *tg_sk_GENERAL_NAME_new_null(void) { return sk_GENERAL_NAME_new_null(); }
static inline int tg_sk_GENERAL_NAME_push(GENERAL_NAMES *sk, GENERAL_NAME *n) { return sk_GENERAL_NAME_push(sk, n); }
static inline void tg_sk_GENERAL_NAME_pop_free(GENERAL_NAMES *sk) { sk_GENERAL_NAME_pop_free(sk, GENERAL_NAME_free); }

// MARK: - SSL_CTX options, modes, versions, session cache

static inline uint64_t tg_SSL_OP_ALL(void) { return SSL_OP_ALL; }
static inline uint64_t tg_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t tg_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t tg_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t tg_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline uint64_t tg_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
static inline uint64_t tg_SSL_OP_ENABLE_MIDDLEBOX_COMPAT(void) { return SSL_OP_ENABLE_MIDDLEBOX_COMPAT; }
static inline uint64_t tg_SSL_OP_NO_SSLv3(void) { return SSL_OP_NO_SSLv3; }
static inline uint64_t tg_SSL_OP_NO_TLSv1(void) { return SSL_OP_NO_TLSv1; }
static inline uint64_t tg_SSL_OP_NO_TLSv1_1(void) { return SSL_OP_NO_TLSv1_1; }

static inline uint64_t tg_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t op) { return SSL_CTX_set_options(ctx, op); }
static inline uint64_t tg_SSL_CTX_clear_options(SSL_CTX *ctx, uint64_t op) { return SSL_CTX_clear_options(ctx, op); }

static inline long tg_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }
static inline long tg_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long tg_SSL_MODE_AUTO_RETRY(void) { return SSL_MODE_AUTO_RETRY; }
static inline long tg_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long tg_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long tg_SSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }

static inline int tg_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int tg_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
static inline int tg_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int tg_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long tg_SSL_SESS_CACHE_OFF(void) { return SSL_SESS_CACHE_OFF; }
static inline long tg_SSL_SESS_CACHE_CLIENT(void) { return SSL_SESS_CACHE_CLIENT; }
static inline long tg_SSL_SESS_CACHE_SERVER(void) { return SSL_SESS_CACHE_SERVER; }
static inline long tg_SSL_SESS_CACHE_BOTH(void) { return SSL_SESS_CACHE_BOTH; }
static inline long tg_SSL_SESS_CACHE_NO_INTERNAL(void) { return SSL_SESS_CACHE_NO_INTERNAL; }
static inline long tg_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long tg_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}

static inline int tg_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
static inline int tg_SSL_CTX_set1_sigalgs_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_sigalgs_list(ctx, list);
}

// MARK: - Certificates on a context or connection

/// Adds `x509` to the context's chain; takes a new reference (the caller keeps its own).
static inline int tg_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return (int)SSL_CTX_add1_chain_cert(ctx, x509);
}
/// Adds `x509` to the connection's chain; takes a new reference (the caller keeps its own).
static inline int tg_SSL_add1_chain_cert(SSL *ssl, X509 *x509) { return (int)SSL_add1_chain_cert(ssl, x509); }

/// Makes `store` the context's verification store; takes a new reference (the caller keeps its own).
static inline int tg_SSL_CTX_set1_verify_cert_store(SSL_CTX *ctx, X509_STORE *store) {
    return (int)SSL_CTX_set1_verify_cert_store(ctx, store);
}

// MARK: - SNI

static inline int tg_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline int tg_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return (int)SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}
static inline int tg_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return (int)SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}
static inline int tg_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int tg_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }
static inline int tg_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }

// MARK: - OCSP stapling (servers)

static inline int tg_SSL_CTX_set_tlsext_status_cb(SSL_CTX *ctx, int (*cb)(SSL *, void *)) {
    return (int)SSL_CTX_set_tlsext_status_cb(ctx, cb);
}
// Takes ownership of `response`, which must come from OPENSSL_malloc.
static inline int tg_SSL_set_tlsext_status_ocsp_resp(SSL *ssl, unsigned char *response, long length) {
    return (int)SSL_set_tlsext_status_ocsp_resp(ssl, response, length);
}
static inline void *tg_OPENSSL_malloc(size_t count) { return OPENSSL_malloc(count); }
// Clients: ask for the server's OCSP response, and read what it stapled (nil, -1: none).
static inline int tg_SSL_set_tlsext_status_type_ocsp(SSL *ssl) { return (int)SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp); }
static inline long tg_SSL_get_tlsext_status_ocsp_resp(SSL *ssl, const unsigned char **response) {
    return SSL_get_tlsext_status_ocsp_resp(ssl, response);
}
static inline int tg_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *sk) { return sk_OPENSSL_STRING_num(sk); }
static inline const char *tg_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *sk, int i) { return sk_OPENSSL_STRING_value(sk, i); }
static inline int tg_OCSP_RESPONSE_STATUS_SUCCESSFUL(void) { return OCSP_RESPONSE_STATUS_SUCCESSFUL; }
static inline int tg_V_OCSP_CERTSTATUS_GOOD(void) { return V_OCSP_CERTSTATUS_GOOD; }
static inline int tg_V_OCSP_CERTSTATUS_REVOKED(void) { return V_OCSP_CERTSTATUS_REVOKED; }

// MARK: - ALPN

typedef int (*tg_alpn_select_cb)(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                 const unsigned char *in, unsigned int inlen, void *arg);
static inline void tg_SSL_CTX_set_alpn_select_cb(SSL_CTX *ctx, tg_alpn_select_cb cb, void *arg) {
    SSL_CTX_set_alpn_select_cb(ctx, cb, arg);
}
static inline int tg_SSL_CTX_set_alpn_protos(SSL_CTX *ctx, const unsigned char *protos, unsigned int len) {
    return SSL_CTX_set_alpn_protos(ctx, protos, len);
}
static inline int tg_SSL_set_alpn_protos(SSL *ssl, const unsigned char *protos, unsigned int len) {
    return SSL_set_alpn_protos(ssl, protos, len);
}
static inline void tg_SSL_get0_alpn_selected(const SSL *ssl, const unsigned char **data, unsigned int *len) {
    SSL_get0_alpn_selected(ssl, data, len);
}

// MARK: - Ex data

static inline int tg_SSL_get_ex_new_index(long argl, void *argp) {
    return SSL_get_ex_new_index(argl, argp, NULL, NULL, NULL);
}
static inline int tg_SSL_CTX_get_ex_new_index(long argl, void *argp) {
    return SSL_CTX_get_ex_new_index(argl, argp, NULL, NULL, NULL);
}
static inline int tg_SSL_set_ex_data(SSL *ssl, int idx, void *data) { return SSL_set_ex_data(ssl, idx, data); }
static inline void *tg_SSL_get_ex_data(const SSL *ssl, int idx) { return SSL_get_ex_data(ssl, idx); }
static inline int tg_SSL_CTX_set_ex_data(SSL_CTX *ctx, int idx, void *data) {
    return SSL_CTX_set_ex_data(ctx, idx, data);
}
static inline void *tg_SSL_CTX_get_ex_data(const SSL_CTX *ctx, int idx) { return SSL_CTX_get_ex_data(ctx, idx); }

// MARK: - TLS handler (alerts, versions, verification modes)

static inline int tg_SSL_CB_READ_ALERT(void) { return SSL_CB_READ_ALERT; }
static inline int tg_SSL_CB_ALERT(void) { return SSL_CB_ALERT; }
static inline int tg_SSL_AD_UNRECOGNIZED_NAME(void) { return SSL_AD_UNRECOGNIZED_NAME; }
static inline int tg_SSL_AD_INTERNAL_ERROR(void) { return SSL_AD_INTERNAL_ERROR; }
static inline int tg_TLS1_VERSION(void) { return TLS1_VERSION; }
static inline int tg_TLS1_1_VERSION(void) { return TLS1_1_VERSION; }
static inline int tg_SSL_VERIFY_NONE(void) { return SSL_VERIFY_NONE; }
static inline int tg_SSL_VERIFY_PEER(void) { return SSL_VERIFY_PEER; }
static inline int tg_SSL_VERIFY_FAIL_IF_NO_PEER_CERT(void) { return SSL_VERIFY_FAIL_IF_NO_PEER_CERT; }
static inline int tg_SSL_VERIFY_CLIENT_ONCE(void) { return SSL_VERIFY_CLIENT_ONCE; }
static inline int tg_TLSEXT_NAMETYPE_host_name(void) { return TLSEXT_NAMETYPE_host_name; }
static inline long tg_SSL_MODE_NO_AUTO_CHAIN(void) { return SSL_MODE_NO_AUTO_CHAIN; }

#endif
