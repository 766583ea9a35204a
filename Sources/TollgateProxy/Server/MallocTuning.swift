import CMalloc

/// The process's malloc settings for serving: large buffers come from the heap and are reused,
/// instead of being mapped and unmapped one by one.
///
/// Why: glibc maps every block of 128 KiB or more on its own (raising that bound only as such
/// blocks are freed) and gives the top of a heap back to the kernel once 256 KiB of it is free.
/// A stored body is read in 256 KiB pieces, each freed once the client's socket took it, so
/// serving an 8 MiB hit mapped, faulted in page by page (zeroed) and unmapped 32 buffers: two
/// thirds of the system time of a large hit (`bench/cache.sh`, 8 MiB: 229 → 586 requests/s,
/// system time 4.2 → 1.6 ms each; docs/performance.md, session 10). With these settings freed
/// buffers stay in the heap for the next piece, and the process keeps up to
/// ``trimThreshold`` of free heap rather than returning it at once.
public enum MallocTuning {
    /// Blocks below this size come from the heap (glibc's default: 128 KiB, adjusted upward).
    public static let mmapThreshold = 1024 * 1024
    /// Free space at a heap's top kept before it is returned to the kernel (default: 128 KiB,
    /// adjusted upward with the mmap threshold).
    public static let trimThreshold = 32 * 1024 * 1024

    /// Applies the settings, unless the environment sets glibc's own (`GLIBC_TUNABLES`), which
    /// then stand as given. Returns whether they were applied.
    @discardableResult
    public static func apply(environment: [String: String]) -> Bool {
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.") { return false }
        return tollgate_malloc_set_thresholds(mmapThreshold, trimThreshold) == 1
    }

    /// Whether malloc gave the block at `pointer` a mapping of its own (tests).
    public static func isMapped(_ pointer: UnsafeMutableRawPointer) -> Bool {
        tollgate_malloc_block_is_mapped(pointer) != 0
    }
}
