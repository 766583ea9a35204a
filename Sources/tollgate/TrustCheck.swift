import ArgumentParser
import Foundation
import Logging
import NIOCore
import TollgatePolicy
import TollgateSession
import TollgateTLS

extension TrustCommand {
    /// `tollgate trust check HOST[:PORT] [--config FILE]`: makes one connection to the host as the
    /// proxy would under the configuration's rules — the rule's roots, revocation lists and
    /// client identity, its first `connect-to` target — and prints the chain it was shown (pin,
    /// subject, expiry), the lists' next updates, and the trust policy's verdict: the answer to
    /// "will this pin change, or this refreshed CRL, lock the gateway out?" before a reload.
    /// Exit 0 when the proxy would connect (a pin mismatch only reported counts), 1 when it would
    /// refuse.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether the proxy would trust HOST[:PORT] under the configuration's rules, and why."
        )

        @Argument(help: "HOST or HOST:PORT (port 443 when omitted; [::1]:PORT for IPv6).") var target: String
        @Option(name: .long, help: "The configuration file (default: the embedded one).") var config: String?
        @Option(name: .long, help: "Seconds to wait for the connection and handshake.") var timeout: Int = 10

        func run() async throws {
            let (host, port) = try Pin.split(target)
            let configuration = try ConfigurationSource.load(config)
            let decisions = PolicyDecisions(configuration: configuration)
            // The verdict is printed here; the trust log's lines would say it twice.
            let environment = TrustEnvironment(logger: Logger(label: "tollgate.trust") { _ in SwiftLogNoOpLogHandler() })
            let delegate = PolicySessionDelegate(sessionName: "trust-check", decisions: decisions, trustEnvironment: environment)
            let decision = decisions.decide(host: host, port: port)
            print("rule: \(decision.rule.map(\.description) ?? "none (the defaults: system roots, no pins)")")

            var defaults = TLSConfiguration.makeClientConfiguration()
            defaults.deferTrustDecision = true
            defaults.handshakeTimeout = .seconds(Int64(timeout))
            var settings = delegate.tlsConfiguration(host: host, port: port, defaults: defaults)
            settings.deferTrustDecision = true
            settings.applicationProtocols = ["http/1.1"]
            let context: TLSContext
            do {
                context = try TLSContext(configuration: settings)
            } catch {
                throw CommandFailure.user("refused: the rule's TLS settings cannot be used: \(error)")
            }
            for file in decision.trust.crls { print(Self.describeLists(in: file)) }

            let dialled = decision.connectTo.first.map { ($0.host, $0.port) } ?? (host, port)
            if dialled != (host, port) { print("connect-to: \(dialled.0):\(dialled.1) (the rule's first target)") }
            let evaluation = try await Pin.handshake(
                host: dialled.0, port: dialled.1, serverName: host, context: context, timeout: timeout
            )
            for certificate in evaluation.presentedChain {
                print("\(certificate.spkiPin)  \(certificate.subject)  expires \(Self.date(certificate.notAfter))")
            }
            let verdict = delegate.serverTrustVerdict(host: host, port: port, evaluation: evaluation)
            switch verdict.outcome {
            case .trusted:
                if let event = verdict.event {
                    print("trusted, with a report: \(event.message)")
                } else {
                    print("trusted: the proxy would connect to \(host):\(port)")
                }
            case .acceptedInsecure:
                print("accepted without verification (insecure: true)")
            case .refused(let error):
                print("refused: \(verdict.event?.message ?? error.detail)")
                throw ExitCode(CommandFailure.userErrorCode)
            }
        }

        /// `crl FILE: ISSUER, N revoked, next update DATE` for each list in `file` (or why it
        /// cannot be read); `EXPIRED` when past its next update.
        static func describeLists(in file: String) -> String {
            guard let lists = try? CertificateRevocationList.lists(inFile: file) else { return "crl \(file): cannot be read" }
            return lists.map { list in
                let next = list.nextUpdate.map { Self.date($0) + (list.hasExpired() ? " (EXPIRED: every chain it covers fails)" : "") }
                return "crl \(file): \(list.issuer), \(list.revokedCount) revoked, next update \(next ?? "none")"
            }.joined(separator: "\n")
        }

        static func date(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            return formatter.string(from: date)
        }
    }
}
