import ArgumentParser
import Foundation
import TollgateCache
import TollgateSession

extension WarmProgressDisplay.Mode: ExpressibleByArgument {}

/// `warm`'s background sessions.
extension WarmCommand {
    /// `--background-id`, else `warm-` and 16 hex digits of the SHA-256 of the configuration
    /// file's absolute path (`embedded` without one) and `--session`: the same list run again
    /// with the same configuration finds its tasks; two configurations never share them. Each
    /// session of the configuration then runs as `IDENTIFIER.NAME`.
    func backgroundIdentifier() -> String {
        if let backgroundID { return backgroundID }
        let source = config.map { ($0 as NSString).expandingTildeInPath }.map {
            $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0
        }.map { ($0 as NSString).standardizingPath } ?? "embedded"
        let digest = SHA256.hex(SHA256.hash(Array((source + "\n" + (session ?? "")).utf8)))
        return "warm-" + digest.prefix(16)
    }
}

extension Session {
    /// ``detachBackgroundTasks(completion:)``, waiting for it (off the event loops).
    func detachBackgroundTasksAndWait() {
        let done = DispatchSemaphore(value: 0)
        detachBackgroundTasks { done.signal() }
        done.wait()
    }
}
