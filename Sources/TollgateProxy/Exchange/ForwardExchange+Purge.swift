import Foundation
import NIOCore
import NIOPosix
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// `PURGE` (Squid's and Varnish's method, nginx's `proxy_cache_purge`): with `access.purge-clients`
/// set, the proxy answers a client's `PURGE` itself by removing what it stored, and never
/// forwards one. An application behind a reverse cache purges what it changed without the admin
/// API, as it would purge Varnish or Squid.
extension ForwardExchange {
    /// Answers a `PURGE`: `200 purged N` when something was removed, `404 purged 0` when nothing
    /// was stored, `403 purge-refused` for a client not in `access.purge-clients`.
    func servePurge(allowed: Bool) {
        // A body has no meaning here and is not read: the connection ends after the answer.
        if head.hasBody { closeAfterResponse = true }
        guard allowed else {
            respond(OwnResponse(.purgeRefused, "PURGE is answered for access.purge-clients only, and \(memo.clientAddress) is not one"))
            return
        }
        // Under map-remote, `url` and `route` are already the mapped ones, where responses are stored.
        record.route = route
        guard let store = route.session.configuration.responseCache?.store else {
            respond(OwnResponse(.purgeRefused, status: 404, "nothing to purge: the session \(route.sessionName) keeps no cache"))
            return
        }
        guard !store.isReadOnly else {
            respond(OwnResponse(.purgeRefused, status: 409, "the cache is read-only (cache.read-only)"))
            return
        }
        let selection: CachePurgeSelection
        if let field = environment.policy.configuration.cache.tagHeader, head.headerFields.contains(field) {
            selection = .tags(in: head.headerFields.values(for: field), field: field)
        } else {
            // Stored under the rule's cache.key normalization, as the session stores it.
            let keyURL = route.session.configuration.cacheKeyURL ?? { $0 }
            guard let target = CachePurgeSelection.target(url.absoluteString, keyURL: keyURL) else {
                respond(OwnResponse(.badRequest, "PURGE of URL* needs a path before the *"))
                return
            }
            selection = target
        }
        // Fastly's header for a soft purge, which its users' tools send with a PURGE.
        let soft = head.headerFields["Fastly-Soft-Purge"] == "1"
        // Removal waits on the store's writer and fsync (a prefix or tag reads every record).
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { () -> Int in
            try store.purge(selection, soft: soft)
        }.assumeIsolated().whenComplete { [self] result in
            guard !isFinished else { return }
            switch result {
            case .success(let count):
                let body = ByteBuffer(string: CachePurgeSelection.answer(count, soft: soft))
                sendLocalAnswer(status: count > 0 ? 200 : 404, body: body, contentType: "text/plain")
            case .failure(let error):
                respond(OwnResponse(.internalError, "PURGE: \(error)"))
            }
        }
    }
}
