#ifndef TOLLGATE_CBROTLI_SHIM_H
#define TOLLGATE_CBROTLI_SHIM_H

/// The Brotli encoder (RFC 7932) from the system's libbrotli (`libbrotli-dev`): responses sent
/// with `Content-Encoding: br` (`hosts[].compress`).
#include <brotli/encode.h>

#endif
