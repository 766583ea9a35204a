// glibc's malloc tuning, which Swift's Glibc module does not import (<malloc.h>).
#ifndef TOLLGATE_CMALLOC_SHIM_H
#define TOLLGATE_CMALLOC_SHIM_H

#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Sets the size from which malloc maps a block of its own (M_MMAP_THRESHOLD) and the free space
/// at the top of a heap past which it gives memory back (M_TRIM_THRESHOLD). Returns 1 when both
/// were taken.
static inline int tollgate_malloc_set_thresholds(size_t mmap_threshold, size_t trim_threshold) {
    int mapped = mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    int trimmed = mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
    return mapped == 1 && trimmed == 1;
}

/// Sets how many arenas malloc may create (M_ARENA_MAX; glibc's default is 8 per core). Returns 1
/// when it was taken.
static inline int tollgate_malloc_set_arena_max(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

/// How many arenas malloc has: the `<heap nr=` elements of malloc_info's report. -1 when the
/// report could not be written.
static inline int tollgate_malloc_arena_count(void) {
    char *report = NULL;
    size_t length = 0;
    FILE *stream = open_memstream(&report, &length);
    if (stream == NULL) return -1;
    int written = malloc_info(0, stream);
    fclose(stream);
    if (written != 0 || report == NULL) { free(report); return -1; }
    int count = 0;
    for (const char *at = strstr(report, "<heap nr="); at != NULL; at = strstr(at + 1, "<heap nr=")) count++;
    free(report);
    return count;
}

/// Whether malloc gave the block at `pointer` a mapping of its own: glibc keeps a chunk's size in
/// the word before the block, with IS_MMAPPED (0x2) set for such blocks. (Per block, unlike
/// mallinfo2's count of mapped blocks, which other threads change at any moment.)
static inline int tollgate_malloc_block_is_mapped(const void *pointer) {
    return (((const size_t *)pointer)[-1] & 0x2) != 0;
}

#endif
