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
        /// Pages warmed but left out of ``urls`` (not stored, and not needed).
        var dropped = 0
    }

    /// Warms the pages `lookups` read (each once) — an installer reads them first, offline too —
    /// then reads each one stored for the URLs of its pinned files. A page that is one of several
    /// a project's files may be on (an extra index, a page of links) and could not be stored is
    /// left out of the outcomes with a note on standard error: the installer goes on without it,
    /// online and offline; a pin found on no page is a problem as ever.
    func warmIndexPages(
        _ lookups: [PythonPackageIndex.Lookup], warmer: URLWarmer, store: CacheStore, source: String, target: PythonTarget?,
        finished: @escaping @Sendable () -> Void
    ) async -> IndexPages {
        var pages = IndexPages()
        // Each page once, in the order first needed, with how it is read; a page some project
        // has no other page beside is needed.
        var kinds: [String: PythonPackageIndex.Lookup.Kind] = [:]
        var needed: Set<String> = []
        var order: [HTTPURL] = []
        for lookup in lookups {
            for page in lookup.pages where kinds[page.absoluteString] == nil {
                kinds[page.absoluteString] = lookup.kind
                order.append(page)
            }
            if lookup.morePages.isEmpty { needed.insert(lookup.page.absoluteString) }
        }
        let outcomes = await warmer.warm(order, concurrency: concurrency, finished: finished)
        var filesByPage: [String: [PythonPackageIndex.File]] = [:]
        for (page, outcome) in zip(order, outcomes) {
            guard outcome.kind == .stored || outcome.kind == .fresh, let stored = outcome.stored,
                let entry = try? store.lookup(stored.key, requestHeaders: stored.requestHeaders),
                let body = try? entry.body.readAll()
            else {
                if needed.contains(page.absoluteString) {
                    pages.urls.append(page)
                    pages.outcomes.append(outcome)
                } else {
                    pages.dropped += 1
                    standardError("\(source): \(page) was not stored (\(outcome.error ?? outcome.kind.rawValue)): its project's files are looked for on its other pages")
                }
                continue
            }
            pages.urls.append(page)
            pages.outcomes.append(outcome)
            filesByPage[page.absoluteString] = PythonPackageIndex.files(
                in: Array(body.readableBytesView), page: page, contentType: entry.response.headerFields[.contentType],
                kind: kinds[page.absoluteString] ?? .simple
            )
        }
        var listed: Set<String> = []
        for lookup in lookups {
            let found = lookup.pages.compactMap { filesByPage[$0.absoluteString] }
            guard !found.isEmpty else {
                let which = lookup.morePages.isEmpty ? "its index page \(lookup.page) is" : "none of its pages is"
                pages.problems.append("\(source): \(lookup.requirement): \(which) in the cache; its files are not warmed")
                continue
            }
            let pinned = PythonPackageIndex.artifacts(of: lookup, in: found.flatMap { $0 }, source: source, problems: &pages.problems)
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
