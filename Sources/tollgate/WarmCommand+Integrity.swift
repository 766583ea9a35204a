import Foundation
import TollgateCache
import TollgateHTTP

/// `warm` of a lockfile: what was stored is checked against the lockfile's digests.
extension WarmCommand {
    /// Reads each stored artifact's body again and compares its digest with the lockfile's
    /// `integrity`. One that differs is removed from the cache — an offline build must not be
    /// handed bytes the lockfile does not pin — and its outcome becomes a failure saying both
    /// digests; one that cannot be read fails too.
    func checkIntegrity(
        _ outcomes: inout [URLWarmer.Outcome], urls: [HTTPURL], integrity: [String: ArtifactDigest], store: CacheStore
    ) {
        for index in outcomes.indices {
            let url = urls[index]
            guard let expected = integrity[url.absoluteString], let stored = outcomes[index].stored,
                outcomes[index].kind == .stored || outcomes[index].kind == .fresh
            else { continue }
            func fail(_ why: String) {
                outcomes[index].kind = .failed
                outcomes[index].error = why
                outcomes[index].line = "failed  \(url): \(why)"
            }
            do {
                guard let entry = try store.lookup(stored.key, requestHeaders: stored.requestHeaders) else {
                    fail("nothing is stored under \(stored.key.url) to check against the lockfile's integrity")
                    continue
                }
                guard let mismatch = try expected.mismatch(of: entry.body) else { continue }
                _ = try store.remove(key: stored.key)
                fail(
                    "integrity mismatch: the lockfile says \(mismatch.expected), the body is \(mismatch.actual); removed from the cache"
                )
            } catch {
                fail("cannot check the lockfile's integrity: \(error)")
            }
        }
    }
}
