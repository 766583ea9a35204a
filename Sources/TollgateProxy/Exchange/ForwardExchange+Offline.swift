import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateSession

/// A request while the proxy is offline (`serve --offline`, `offline: true`): answered from the
/// cache or not at all, with nothing sent, resolved or connected upstream.
///
/// - No destination lookup: the destination rules refuse only what they refuse by name (or by
///   address, when the host is one) (``DestinationCheck/offlineVerdict(for:port:)``).
/// - The task runs with `return-cache-dont-load`: any stored response is served whatever its
///   age, and the session fails a miss without touching the network; the miss is answered
///   `504 offline-miss`, naming the URL, and goes into the miss report.
/// - With a manifest, only the variants it lists are served; the body is hashed while it is sent
///   (``ManifestBodyCheck``) and cut short when it is not the manifest's.
extension ForwardExchange {
    func startOffline(on route: ProxyRoute) {
        let method = head.method
        if head.isUpgrade {
            answerOfflineMiss(.upgrade, "a protocol upgrade (\(head.headerFields[.upgrade] ?? "?")) needs the network")
            return
        }
        guard method == "GET" || method == "HEAD" else {
            answerOfflineMiss(.method, "\(method) requests are never answered from the cache")
            return
        }
        guard let host = canonicalHost() else { return }
        if case .denied(let why) = rules.destinations.offlineVerdict(for: host, port: url.effectivePort) {
            respond(OwnResponse(.hostDenied, why))
            return
        }
        if let lock = environment.offline.manifest {
            let keyURL = route.session.configuration.cacheKeyURL.map { $0(url) } ?? url
            let normalizer = route.session.configuration.responseCache?.store.options.keyNormalizer ?? .standard
            let key = CacheKey(url: keyURL, normalizer: normalizer).url
            guard let (entry, negotiated) = lock.entry(forKey: key, headerFields: head.headerFields) else {
                if let problem = lock.problem(forKey: key, headerFields: head.headerFields) {
                    noteOfflineMiss(.manifestMismatch)
                    respond(
                        OwnResponse(
                            .manifestMismatch,
                            "offline: \(url.absoluteString): the cache does not hold what the manifest locks "
                                + "(checked at start: \(problem.kind.rawValue))"
                        )
                    )
                } else {
                    answerOfflineMiss(.notInManifest, "not in the manifest")
                }
                return
            }
            manifestEntry = entry
            manifestNegotiated = negotiated
            if !head.isHead { manifestCheck = ManifestBodyCheck(entry) }
        }
        startTask(on: route, cachePolicy: .returnCacheDontLoad)
    }

    /// Offline with a manifest whose entry the request took by what it accepts rather than by its
    /// own values: the request's fields for the lookup get that entry's values — the variant the
    /// manifest locks.
    @inline(never)
    func selectManifestVariant(in fields: inout HeaderFields) {
        manifestEntry?.selectVariant(in: &fields)
    }

    /// Records this request in the miss report.
    func noteOfflineMiss(_ reason: OfflineMissReport.Reason) {
        environment.offline.misses.record(method: head.method, url: url.absoluteString, reason: reason)
    }

    /// Answers `504 offline-miss` (naming the URL and why) and records the miss.
    func answerOfflineMiss(_ reason: OfflineMissReport.Reason, _ why: String) {
        noteOfflineMiss(reason)
        respond(OwnResponse(.offlineMiss, "offline: \(head.method) \(url.absoluteString): \(why)"))
    }

    /// The answer for a task that failed offline: a miss when nothing usable was stored.
    func offlineAnswer(for error: SessionError) -> OwnResponse {
        guard error.code == .resourceUnavailable else { return OwnResponse(for: error) }
        noteOfflineMiss(.notCached)
        return OwnResponse(.offlineMiss, "offline: \(head.method) \(url.absoluteString) is not in the cache")
    }

    /// Whether the stored response about to be sent is the one the manifest locks (status and
    /// length); nil when it is, else the answer to give instead.
    func manifestRefusal(of response: TollgateHTTP.HTTPResponseHead) -> OwnResponse? {
        guard let entry = manifestEntry else { return nil }
        // A 304 answers the client's own conditional request: no body to check.
        if response.status == 304 { return nil }
        var differs: String?
        if response.status != entry.status {
            differs = "status \(response.status), the manifest has \(entry.status)"
        } else if !head.isHead, let length = response.headerFields[.contentLength].flatMap(Int64.init),
            length != entry.size
        {
            differs = "\(length) bytes, the manifest has \(entry.size)"
        }
        guard let differs else { return nil }
        noteOfflineMiss(.manifestMismatch)
        return OwnResponse(.manifestMismatch, "offline: \(url.absoluteString): the cache holds \(differs)")
    }

    /// A body piece offline with a manifest: hashed, and sent once the next piece (or the end)
    /// shows it is not the last.
    func passChecked(_ data: ByteBuffer, to connection: any ClientResponder) {
        if let ready = manifestCheck?.pass(data) { connection.sendBody(ready) }
    }

    /// The body ended offline with a manifest: the last piece and the end when the body was the
    /// manifest's, else the connection is closed without them.
    func finishChecked(_ check: inout ManifestBodyCheck) {
        let (last, matches) = check.finish()
        guard matches else {
            noteOfflineMiss(.manifestMismatch)
            record.errorCode = ProxyErrorCode.manifestMismatch.rawValue
            standardErrorLine(
                "tollgate: offline: \(url.absoluteString): the body sent is not the manifest's "
                    + "(\(check.received) bytes; expected \(check.expectedSize), sha256 \(check.expectedSHA256)); "
                    + "the response was cut short"
            )
            finish()?.abort()
            return
        }
        let connection = finish()
        if let last { connection?.sendBody(last) }
        connection?.sendEnd()
    }
}
