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
    /// What a `PURGE` removes: every variant of the URL (under the rule's `cache.key`), every URL
    /// under a prefix (a target ending in `*`), or every response naming a tag (the request
    /// carries `cache.tag-header` with the tags, as Varnish's `xkey-purge`).
    private enum Purge: Sendable {
        case url(String)
        case prefix(String)
        case tags(Set<String>, field: String)
    }

    /// Answers a `PURGE`: `200 purged N` when something was removed, `404 purged 0` when nothing
    /// was stored, `403 purge-refused` for a client not in `access.purge-clients`.
    func servePurge(allowed: Bool) {
        // A body has no meaning here and is not read: the connection ends after the answer.
        if head.hasBody { closeAfterResponse = true }
        guard allowed else {
            respond(OwnResponse(.purgeRefused, "PURGE is answered for access.purge-clients only, and \(memo.clientAddress) is not one"))
            return
        }
        // A mapped path's responses are stored under the URL it is mapped to.
        let route = mappedRemotely(memo.route(for: url, environment: environment))
        record.route = route
        guard let store = route.session.configuration.responseCache?.store else {
            respond(OwnResponse(.purgeRefused, status: 404, "nothing to purge: the session \(route.sessionName) keeps no cache"))
            return
        }
        guard !store.isReadOnly else {
            respond(OwnResponse(.purgeRefused, status: 409, "the cache is read-only (cache.read-only)"))
            return
        }
        let purge: Purge
        let target = url.absoluteString
        if let field = environment.policy.configuration.cache.tagHeader, head.headerFields.contains(field) {
            let tags = head.headerFields.values(for: field).flatMap { CacheTags.tags(in: Substring($0)) }.map(String.init)
            purge = .tags(Set(tags), field: field)
        } else if target.hasSuffix("*") {
            guard let prefix = CacheStore.urlPrefix(String(target.dropLast())) else {
                respond(OwnResponse(.badRequest, "PURGE of URL* needs a path before the *"))
                return
            }
            purge = .prefix(prefix)
        } else {
            // Stored under the rule's cache.key normalization, as the session stores it.
            purge = .url((route.session.configuration.cacheKeyURL.map { $0(url) } ?? url).absoluteString)
        }
        // Removal waits on the store's writer and fsync (a prefix or tag reads every record).
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { () -> Int in
            switch purge {
            case .url(let url): try store.remove(url: url)
            case .prefix(let prefix): try store.remove(urlPrefix: prefix)
            case .tags(let tags, let field): try store.remove(taggedWith: tags, in: field)
            }
        }.assumeIsolated().whenComplete { [self] result in
            guard !isFinished else { return }
            switch result {
            case .success(let count):
                sendLocalAnswer(status: count > 0 ? 200 : 404, body: ByteBuffer(string: "purged \(count)\n"), contentType: "text/plain")
            case .failure(let error):
                respond(OwnResponse(.internalError, "PURGE: \(error)"))
            }
        }
    }
}
