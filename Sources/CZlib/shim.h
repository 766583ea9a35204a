#ifndef TOLLGATE_CZLIB_SHIM_H
#define TOLLGATE_CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 is a macro (it passes the library's version and the stream's size): Swift cannot
/// call it, so it is wrapped. `windowBits` -15: raw deflate, as a zip archive stores it.
static inline int tollgate_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

/// deflateInit2 likewise: `windowBits` 31 is a 32 KiB window with the gzip wrapper (RFC 1952),
/// as a response's `Content-Encoding: gzip` is.
static inline int tollgate_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
}

/// deflateInit2 for raw deflate (no wrapper) with a window of 2^`windowBits` bytes (9–15): a
/// WebSocket message's permessage-deflate (RFC 7692).
static inline int tollgate_deflate_init_raw(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, -windowBits, 8, Z_DEFAULT_STRATEGY);
}

#endif
