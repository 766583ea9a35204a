import CMalloc

/// The process's malloc settings (`tollgate` applies them first thing, for every command): large
/// buffers come from the heap and are reused instead of being mapped and unmapped one by one, and
/// the heaps are few.
///
/// Why the thresholds: glibc maps every block of 128 KiB or more on its own (raising that bound
/// only as such blocks are freed) and gives the top of a heap back to the kernel once 256 KiB of
/// it is free. A stored body is read in 128 KiB pieces, each freed once the client's socket took
/// it, so serving an 8 MiB hit mapped, faulted in page by page (zeroed) and unmapped 32 buffers:
/// two thirds of the system time of a large hit (`bench/cache.sh`, 8 MiB: 229 → 586 requests/s,
/// system time 4.2 → 1.6 ms each; docs/performance.md, session 10). With these settings freed
/// buffers stay in the heap for the next piece, and the process keeps up to
/// ``trimThreshold`` of free heap rather than returning it at once.
///
/// Why the arena limit: glibc gives each thread that allocates its own arena (up to 8 per core),
/// and memory freed in one arena serves only that arena again. The pieces of a stored body are
/// allocated on NIO's file-I/O threads and freed on the event loop, so with 64 connections
/// taking 8 MiB hits the file-I/O threads' arenas and the loop's each grew to their own peak,
/// and the peaks added up: 104 MiB peak RSS over issue #29's run. With one arena per event loop
/// (the loops are what allocates on the hot path; the other threads share) the process's peak
/// is the peak of what is live (docs/performance.md, session 18).
public enum MallocTuning {
    /// Blocks below this size come from the heap (glibc's default: 128 KiB, adjusted upward).
    public static let mmapThreshold = 1024 * 1024
    /// Free space at a heap's top kept before it is returned to the kernel (default: 128 KiB,
    /// adjusted upward with the mmap threshold).
    public static let trimThreshold = 32 * 1024 * 1024

    /// The number of malloc arenas for a process of `eventLoops` event loops: one each, at least one.
    public static func arenaLimit(eventLoops: Int) -> Int { max(1, eventLoops) }

    /// The event-loop count the process runs with: `NIO_SINGLETON_GROUP_LOOP_COUNT` (which
    /// `tollgate` sets from its CPU affinity before serving), else the processor count.
    public static func eventLoopCount(environment: [String: String], processors: Int) -> Int {
        environment["NIO_SINGLETON_GROUP_LOOP_COUNT"].flatMap { Int($0) }.map { max(1, $0) } ?? processors
    }

    /// Applies the settings, unless the environment sets glibc's own (`GLIBC_TUNABLES`), which
    /// then stand as given. Returns whether they were applied. Call before the threads start.
    @discardableResult
    public static func apply(environment: [String: String], eventLoops: Int) -> Bool {
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.") { return false }
        let thresholds = tollgate_malloc_set_thresholds(mmapThreshold, trimThreshold) == 1
        let arenas = tollgate_malloc_set_arena_max(Int32(arenaLimit(eventLoops: eventLoops))) == 1
        return thresholds && arenas
    }

    /// Whether malloc gave the block at `pointer` a mapping of its own (tests).
    public static func isMapped(_ pointer: UnsafeMutableRawPointer) -> Bool {
        tollgate_malloc_block_is_mapped(pointer) != 0
    }

    /// How many arenas malloc has now (malloc_info), or nil when it could not say (tests).
    public static func arenaCount() -> Int? {
        let count = Int(tollgate_malloc_arena_count())
        return count >= 0 ? count : nil
    }
}
