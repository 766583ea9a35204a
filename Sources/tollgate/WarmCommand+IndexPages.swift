import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP

/// `warm` of a lockfile that pins Python files by digest or name (pip's requirements, poetry):
/// the index pages first, then the files they give URLs for.
extension WarmCommand {
    /// What reading the index pages found.
    struct IndexPages {
        /// The pages, in the order first needed, and what became of each.
        var urls: [HTTPURL] = []
        var outcomes: [URLWarmer.Outcome] = []
        /// The pinned files, with the digest each must have.
        var artifacts: [PackageLockfile.Artifact] = []
        /// A line for each pin no page gave a URL for.
        var problems: [String] = []
        /// Pinned files left out: not for the ``PythonTarget``.
        var leftOut = 0
    }

    /// Warms the pages `lookups` read (each once) — an installer reads them first, offline too —
    /// then reads each one stored for the URLs of its pinned files.
    func warmIndexPages(
        _ lookups: [PythonPackageIndex.Lookup], warmer: URLWarmer, store: CacheStore, source: String, target: PythonTarget?,
        finished: @escaping @Sendable () -> Void
    ) async -> IndexPages {
        var pages = IndexPages()
        var seen: Set<String> = []
        // The first lookup of each page: its URL and how it is read.
        let firsts = lookups.filter { seen.insert($0.page.absoluteString).inserted }
        pages.urls = firsts.map(\.page)
        pages.outcomes = await warmer.warm(pages.urls, concurrency: concurrency, finished: finished)
        var filesByPage: [String: [PythonPackageIndex.File]] = [:]
        for (lookup, outcome) in zip(firsts, pages.outcomes) {
            guard outcome.kind == .stored || outcome.kind == .fresh, let stored = outcome.stored,
                let entry = try? store.lookup(stored.key, requestHeaders: stored.requestHeaders),
                let body = try? entry.body.readAll()
            else { continue }
            filesByPage[lookup.page.absoluteString] = PythonPackageIndex.files(
                in: Array(body.readableBytesView), page: lookup.page, contentType: entry.response.headerFields[.contentType],
                kind: lookup.kind
            )
        }
        var listed: Set<String> = []
        for lookup in lookups {
            guard let files = filesByPage[lookup.page.absoluteString] else {
                pages.problems.append("\(source): \(lookup.requirement): its index page \(lookup.page) is not in the cache; its files are not warmed")
                continue
            }
            let pinned = PythonPackageIndex.artifacts(of: lookup, in: files, source: source, problems: &pages.problems)
            // One lookup is one release: its files are chosen together.
            let chosen = target.map { PackageLockfile.selecting(pinned, for: $0) } ?? pinned
            pages.leftOut += pinned.count - chosen.count
            for artifact in chosen where listed.insert(artifact.url.absoluteString).inserted {
                pages.artifacts.append(artifact)
            }
        }
        return pages
    }
}
