#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files (`RLIMIT_NOFILE`). A proxy holds two descriptors for each
/// connection it relays and more for its pools and cache files, and the soft limit most systems
/// start a process with (1024) is reached by a few hundred clients; the hard limit is usually far
/// higher. `serve` raises the soft limit to the hard one at start, as Go programs do by default.
public enum OpenFileLimit {
    /// The soft limit now.
    public static var current: UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return UInt64(limit.rlim_cur)
    }

    /// Raises the soft limit to the hard limit (at most `ceiling`); returns the soft limit after.
    @discardableResult
    public static func raiseToHardLimit(ceiling: UInt64 = 1 << 20) -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let wanted = min(UInt64(limit.rlim_max), ceiling)
        if UInt64(limit.rlim_cur) < wanted {
            limit.rlim_cur = rlim_t(wanted)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }
}
