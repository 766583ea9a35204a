#ifndef TOLLGATE_CZLIB_SHIM_H
#define TOLLGATE_CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 is a macro (it passes the library's version and the stream's size): Swift cannot
/// call it, so it is wrapped. `windowBits` -15: raw deflate, as a zip archive stores it.
static inline int tollgate_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

/// deflateInit2 with any `windowBits` zlib takes: 9–15 a zlib stream, -9…-15 raw deflate (a
/// WebSocket message's permessage-deflate, RFC 7692), 25–31 gzip.
static inline int tollgate_deflate_init(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

#endif
