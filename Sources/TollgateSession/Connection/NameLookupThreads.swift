public import NIOPosix

/// The threads host names are looked up on: `getaddrinfo` blocks, for as long as the name
/// service takes (seconds, when a DNS server is slow or gone).
///
/// Not NIO's singleton thread pool, which has one thread per core and also runs the cache's
/// commits and file I/O: on two cores, two slow lookups held every commit, and lookups went two at
/// a time — a browser opening a page with thirty hosts waited for them in turn. 16 threads let that
/// many lookups run at once; more wait for a free thread. Idle threads cost their stacks' address
/// space, not memory.
public enum NameLookupThreads {
    /// How many lookups run at once.
    public static let count = 16

    /// The pool, started on first use and never stopped (it lives as long as the process).
    public static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: count)
        pool.start()
        return pool
    }()
}
