import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS

/// Fetches the OCSP response of each certificate of a TLS listener with `ocsp-stapling: true`
/// from the responder the certificate names (nginx's `ssl_stapling on`, HAProxy's
/// `ocsp-update on`), for its handshakes to staple (``OCSPStaples``).
///
/// Each fetch is a POST of the DER request (`application/ocsp-request`) on the session the
/// responder's host rule picks — its access rules, upstream proxy and trust apply, as to any
/// request — never from the cache. An answer is stapled once it is a successful response about the
/// certificate, signed by its issuer (or a responder the issuer delegated to), and current.
/// Refreshed at half its validity, between 5 minutes and an hour after the last fetch
/// (HAProxy's `ocsp-update.mindelay`/`maxdelay`); a failed fetch is tried again 5 minutes later,
/// the last response stapled meanwhile while it is current. The listener's context is made again
/// for the first connection after a reload, and the responses are fetched again then. An offline
/// proxy fetches nothing. With an ``OCSPStapleArchive`` each response fetched is kept on disk, and
/// a certificate with none stapled yet staples the one kept (checked again, and current) before
/// its first fetch — a restart, even offline or with the responder down, staples at once.
final class OCSPStapleFetcher: Sendable {
    /// What the listener's handshakes staple from.
    let staples = OCSPStaples()
    private let listener: String
    private let policy: any ProxyPolicy
    /// Whether the proxy is offline now (`serve --offline`, or the configuration's `offline`).
    private let offline: OfflineMode
    private let running = NIOLockedValueBox<[Task<Void, Never>]>([])
    /// The certificate files fetched for, with their chains' leaves (for ``stapled(forCertificateFile:)``).
    private let leaves = NIOLockedValueBox<[String: Certificate]>([:])
    /// Where fetched responses are kept across restarts; nil: in memory only.
    private let archive: OCSPStapleArchive?

    static let logger = Logger(label: "tollgate.listener")
    /// The shortest and longest time between two fetches for one certificate.
    static let shortestRefresh: Duration = .seconds(300)
    static let longestRefresh: Duration = .seconds(3600)

    init(listener: String, policy: any ProxyPolicy, offline: OfflineMode, archive: OCSPStapleArchive? = nil) {
        self.listener = listener
        self.policy = policy
        self.offline = offline
        self.archive = archive
    }

    /// Fetches for each certificate file's chain (a certificate and its issuer) now and keeps
    /// them fresh, stopping what ran for the chains of before (a reload).
    func fetch(for chains: [(file: String, chain: [Certificate])]) {
        leaves.withLockedValue { leaves in
            leaves = Dictionary(chains.map { ($0.file, $0.chain[0]) }, uniquingKeysWith: { first, _ in first })
        }
        for (_, chain) in chains { stapleKept(chain) }
        let tasks = chains.map { file, chain in
            Task { [self] in
                while !Task.isCancelled {
                    let delay = await fetchOnce(chain)
                    try? await Task.sleep(for: delay)
                }
            }
        }
        let previous = running.withLockedValue { running in
            defer { running = tasks }
            return running
        }
        for task in previous { task.cancel() }
    }

    /// The response stapled now for the certificate in `file`: nil inside when none is (not
    /// fetched yet, or every fetch failed, or out of date). Nil for a file not fetched for.
    func stapled(forCertificateFile file: String) -> OCSPResponse?? {
        guard let leaf = leaves.withLockedValue({ $0[file] }) else { return nil }
        guard let response = staples.response(for: leaf), response.isCurrent() else { return .some(nil) }
        return .some(response)
    }

    /// Staples the response kept for `chain`'s leaf in the archive, when none is stapled yet (or
    /// the one stapled is out of date) and the one kept is good: before the first fetch of a run.
    private func stapleKept(_ chain: [Certificate]) {
        let leaf = chain[0]
        guard let archive, staples.response(for: leaf)?.isCurrent() != true, let kept = archive.response(for: chain) else { return }
        staples.set(kept, for: leaf)
        Self.logger.info(
            "stapling the OCSP response kept from an earlier run until a fetch replaces it",
            metadata: [
                "listener": "\(listener)", "subject": "\(leaf.subject)", "status": "\(kept.status.rawValue)",
                "next_update": "\(kept.nextUpdate.map { "\($0)" } ?? "-")", "archive": "\(archive.directory)",
            ]
        )
    }

    /// Stops fetching.
    func stop() {
        for task in running.withLockedValue({ running in defer { running = [] }; return running }) { task.cancel() }
    }

    /// One fetch; returns how long until the next.
    private func fetchOnce(_ chain: [Certificate]) async -> Duration {
        let leaf = chain[0]
        guard !offline.isOffline(policy) else { return Self.longestRefresh }
        do {
            let response = try await Self.fetch(chain, policy: policy)
            if Task.isCancelled { return .zero }
            staples.set(response, for: leaf)
            do {
                try archive?.keep(response, for: leaf)
            } catch {
                Self.logger.warning(
                    "cannot keep the fetched OCSP response on disk; a restart staples nothing until it fetches again",
                    metadata: ["listener": "\(listener)", "subject": "\(leaf.subject)", "error": "\(error)"]
                )
            }
            Self.logger.info(
                "fetched the OCSP response stapled for a listener's certificate",
                metadata: [
                    "listener": "\(listener)", "subject": "\(leaf.subject)", "status": "\(response.status.rawValue)",
                    "next_update": "\(response.nextUpdate.map { "\($0)" } ?? "-")",
                ]
            )
            return Self.refreshDelay(after: response, now: Date())
        } catch {
            if Task.isCancelled { return .zero }
            Self.logger.warning(
                "cannot fetch the OCSP response for a listener's certificate; the last one fetched is stapled while it is current",
                metadata: ["listener": "\(listener)", "subject": "\(leaf.subject)", "error": "\(error)"]
            )
            return Self.shortestRefresh
        }
    }

    /// Half of `response`'s validity after its `thisUpdate`, from 5 minutes to an hour from `now`.
    static func refreshDelay(after response: OCSPResponse, now: Date) -> Duration {
        guard let nextUpdate = response.nextUpdate else { return longestRefresh }
        let halfway = response.thisUpdate.addingTimeInterval(nextUpdate.timeIntervalSince(response.thisUpdate) / 2)
        let seconds = min(max(halfway.timeIntervalSince(now), 300), 3600)
        return .seconds(seconds)
    }

    /// Asks the responder `chain`'s leaf names about it; the answer, checked.
    static func fetch(_ chain: [Certificate], policy: any ProxyPolicy) async throws -> OCSPResponse {
        guard let responder = OCSPResponse.responderURLs(of: chain[0]).lazy.compactMap({ HTTPURL(string: $0) }).first else {
            throw OCSPFetchError(description: "the certificate names no http(s) OCSP responder")
        }
        let request = try OCSPResponse.request(for: chain)
        let route = policy.proxyRoute(for: responder)
        guard !route.isDenied else { throw OCSPFetchError(description: "\(responder): denied by the rule \(route.ruleLabel)") }
        let (body, head): (ByteBuffer, HTTPResponseHead)
        do {
            (body, head) = try await route.session.data(
                for: Request(
                    method: .post, url: responder,
                    headerFields: ["Content-Type": "application/ocsp-request", "Accept": "application/ocsp-response"],
                    body: .bytes(ByteBuffer(bytes: request)), cachePolicy: .reload, timeoutInterval: .seconds(10)
                )
            )
        } catch {
            throw OCSPFetchError(description: "\(responder): \(error)")
        }
        guard head.status == 200 else { throw OCSPFetchError(description: "\(responder) answered \(head.status)") }
        do {
            return try OCSPResponse(verifying: Array(body.readableBytesView), for: chain)
        } catch {
            throw OCSPFetchError(description: "\(responder) answered with a response that cannot be stapled: \(error)")
        }
    }
}

/// Why an OCSP response could not be fetched.
struct OCSPFetchError: Error, CustomStringConvertible {
    let description: String
}
