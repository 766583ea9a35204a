#ifndef TOLLGATE_CLMDB_SHIM_H
#define TOLLGATE_CLMDB_SHIM_H

// The system LMDB (liblmdb-dev). Every constant Tollgate uses is a plain
// integer macro that Swift imports directly, so no wrappers are needed here.
#include <lmdb.h>

#endif
