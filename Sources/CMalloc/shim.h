// glibc's malloc tuning, which Swift's Glibc module does not import (<malloc.h>).
#ifndef TOLLGATE_CMALLOC_SHIM_H
#define TOLLGATE_CMALLOC_SHIM_H

#include <malloc.h>
#include <stddef.h>

/// Sets the size from which malloc maps a block of its own (M_MMAP_THRESHOLD) and the free space
/// at the top of a heap past which it gives memory back (M_TRIM_THRESHOLD). Returns 1 when both
/// were taken.
static inline int tollgate_malloc_set_thresholds(size_t mmap_threshold, size_t trim_threshold) {
    int mapped = mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    int trimmed = mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
    return mapped == 1 && trimmed == 1;
}

/// How many blocks malloc has mapped on their own (mallinfo2's hblks).
static inline size_t tollgate_malloc_mapped_blocks(void) {
    return mallinfo2().hblks;
}

#endif
