import TollgateHTTP

/// `warm` of URLs that redirect: under `redirects: pass` (the default) the session hands a
/// redirect on as the response, and a client that follows it asks for each hop — offline too — so
/// each hop is warmed, as the client will ask for it.
extension WarmCommand {
    /// The most hops followed from one listed URL (curl's default is 50, browsers' 20; a
    /// registry's download redirects once or twice).
    static let maximumRedirects = 10

    /// Warms the target of every redirect among `outcomes` (a hop stored or not: the client asks
    /// for the target either way), round by round, each new URL appended to `urls` and its
    /// outcome to `outcomes`. A lockfile's digest moves with the redirect to its target, whose body
    /// is the artifact. A URL still redirecting after ``maximumRedirects`` hops fails. `adding`
    /// is told how many URLs a round adds before it runs, `finished` as each is done.
    func warmRedirectTargets(
        urls: inout [HTTPURL], outcomes: inout [URLWarmer.Outcome], integrity: inout [String: ArtifactDigest],
        warmer: URLWarmer, concurrency: Int, adding: (Int) -> Void, finished: @escaping @Sendable () -> Void
    ) async {
        var start = 0
        var hops = [Int](repeating: 0, count: outcomes.count)
        // The listed URL each warmed URL was reached from (itself for a listed one).
        var roots = Array(outcomes.indices)
        while start < outcomes.count {
            var known = Set(urls.map(\.absoluteString))
            var next: [HTTPURL] = []
            var nextHops: [Int] = []
            var nextRoots: [Int] = []
            for index in start..<outcomes.count {
                guard let location = outcomes[index].location, outcomes[index].kind != .failed else { continue }
                guard hops[index] < Self.maximumRedirects else {
                    let why = "more than \(Self.maximumRedirects) redirects from \(urls[roots[index]]); the last to \(location)"
                    outcomes[index].kind = .failed
                    outcomes[index].error = why
                    outcomes[index].line = "failed  \(urls[index]): \(why)"
                    continue
                }
                if let digest = integrity.removeValue(forKey: urls[index].absoluteString) {
                    integrity[location.absoluteString] = digest
                }
                guard known.insert(location.absoluteString).inserted else { continue }
                next.append(location)
                nextHops.append(hops[index] + 1)
                nextRoots.append(roots[index])
            }
            start = outcomes.count
            guard !next.isEmpty else { return }
            adding(next.count)
            urls += next
            hops += nextHops
            roots += nextRoots
            outcomes += await warmer.warm(next, concurrency: concurrency, finished: finished)
        }
    }
}
