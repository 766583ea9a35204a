import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many event loops the process runs: one per CPU it may actually run on.
///
/// NIO sizes its shared event-loop group by the machine's cores (and cgroup quotas), not by the
/// process's CPU affinity, so a proxy started with `taskset -c 0` (or in a cpuset) would run
/// two loop threads taking turns on one CPU. Unless `NIO_SINGLETON_GROUP_LOOP_COUNT` is set, the
/// count of CPUs in the affinity mask is put there before the group is first used.
enum EventLoopSizing {
    static let variable = "NIO_SINGLETON_GROUP_LOOP_COUNT"

    /// Sets the loop count from the affinity mask; call before anything uses NIO's singleton group.
    static func applyAffinity() {
        guard ProcessInfo.processInfo.environment[variable] == nil, let count = affinityCPUCount() else { return }
        setenv(variable, String(count), 1)
    }

    /// The number of CPUs in this process's affinity mask (`Cpus_allowed` in `/proc/self/status`),
    /// or nil when it cannot be read.
    static func affinityCPUCount(status path: String = "/proc/self/status") -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") })
        else { return nil }
        // A hexadecimal mask in comma-separated groups of 32 bits: "ff,ffffffff".
        let mask = line.dropFirst("Cpus_allowed:".count).filter { $0.isHexDigit }
        let count = mask.reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount }
        return count > 0 ? count : nil
    }
}
