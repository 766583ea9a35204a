import Foundation
import TollgatePolicy
import TollgateTLS

/// `GET /listeners`: each TLS listener's certificates as they are in force — subject, expiry,
/// the OCSP response stapled for each (from its file or fetched: status and nextUpdate) — and
/// how its session tickets are sealed, as JSON. Read from the files (and the fetched staples)
/// at each request, as `/metrics` reads them. No secret: a ticket key is named by its key name,
/// which every ticket carries in the clear.
enum ListenerListing {
    private struct Entry: Encodable {
        var address: String
        var mode: String
        /// `off`, `own` (keys the listener makes and replaces every hour), or `shared` (`session-ticket-keys`).
        var session_tickets: String
        /// The key names of `session-ticket-keys`, the sealing one first.
        var ticket_keys: [String]?
        var certificates: [CertificateEntry]
    }

    private struct CertificateEntry: Encodable {
        var file: String
        var subject: String?
        var not_after: String?
        var error: String?
        var ocsp: Staple?
    }

    private struct Staple: Encodable {
        /// `file` or `fetched`.
        var source: String
        /// `good`, `revoked`, `unknown`; absent when none can be stapled.
        var status: String?
        var next_update: String?
        /// Why none is stapled.
        var error: String?
    }

    /// The listing for the listeners of `configuration`; `fetchers` by listener address.
    static func json(configuration: PolicyConfiguration, fetchers: [String: OCSPStapleFetcher]) -> String {
        let time = ISO8601DateFormatter()
        var entries: [Entry] = []
        for listener in configuration.listeners {
            guard let tls = listener.tls else { continue }
            let address = listener.address.description
            var entry = Entry(
                address: address, mode: "\(listener.mode)",
                session_tickets: !tls.sessionTickets ? "off" : tls.sessionTicketKeyFiles.isEmpty ? "own" : "shared",
                ticket_keys: tls.sessionTicketKeyFiles.isEmpty
                    ? nil : tls.sessionTicketKeyFiles.map { (try? SessionTicketKey(contentsOf: $0)).map(\.description) ?? "unreadable: \($0)" },
                certificates: []
            )
            for files in tls.certificates {
                var certificate = CertificateEntry(file: files.certificate)
                let chain: [Certificate]
                do {
                    chain = try Certificate.bundle(pemFile: files.certificate)
                } catch {
                    certificate.error = "\(error)"
                    entry.certificates.append(certificate)
                    continue
                }
                certificate.subject = chain.first?.subject
                certificate.not_after = chain.first.map { time.string(from: $0.notAfter) }
                func stapled(_ response: OCSPResponse, from source: String) -> Staple {
                    Staple(source: source, status: response.status.rawValue, next_update: response.nextUpdate.map(time.string(from:)))
                }
                switch ListenerStaple.of(files, chain: chain, tls: tls, address: address, fetchers: fetchers) {
                case nil:
                    break
                case .file(.success(let response)):
                    certificate.ocsp = response.isCurrent() ? stapled(response, from: "file") : Staple(source: "file", error: "its nextUpdate has passed: not stapled")
                case .file(.failure(let error)):
                    certificate.ocsp = Staple(source: "file", error: "\(error)")
                case .fetched(let response):
                    certificate.ocsp = response.map { stapled($0, from: "fetched") }
                        ?? Staple(source: "fetched", error: "none fetched yet, or every fetch failed (see the log)")
                }
                entry.certificates.append(certificate)
            }
            entries.append(entry)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(entries)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
