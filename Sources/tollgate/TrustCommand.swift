import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import TollgateTLS

/// `tollgate trust pin HOST[:PORT]`: connects, and prints one line per certificate of the
/// presented chain, `sha256/BASE64  SUBJECT` (its SPKI pin), so an operator can write pins —
/// also for a chain that is not trusted (a private CA): then it says so, and why, on stderr.
/// `--connect-to` asks a backend of a `connect-to` rule for the name's chain.
///
/// `tollgate trust check HOST[:PORT] [--config FILE]`: connects as the proxy would under the
/// configuration's rules (``TrustCheck``) and says whether it would trust the host, and why.
struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Inspect servers' certificates for trust policies.",
        subcommands: [Pin.self, Check.self]
    )

    struct Pin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the SPKI pins of the chain HOST[:PORT] presents.")

        @Argument(help: "HOST or HOST:PORT (port 443 when omitted; [::1]:PORT for IPv6).") var target: String
        @Option(name: .long, help: "A PEM bundle of extra trust roots (a private CA).") var caFile: String?
        @Option(name: .long, help: "Seconds to wait for the connection and handshake.") var timeout: Int = 10
        @Option(
            name: .long,
            help: "Connect to HOST:PORT instead (a connect-to target), sending the first argument's name and checking the chain for it."
        ) var connectTo: String?

        func run() async throws {
            let (host, port) = try Self.split(target)
            let dialled = try connectTo.map { try Self.split($0) } ?? (host, port)
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.deferTrustDecision = true
            configuration.handshakeTimeout = .seconds(Int64(timeout))
            if let caFile { configuration.trustRoots = TrustRoots(includesSystemRoots: true, pemFiles: [caFile]) }
            let context: TLSContext
            do {
                context = try TLSContext(configuration: configuration)
            } catch {
                throw CommandFailure.user("TLS settings: \(error)")
            }
            let evaluation = try await Self.handshake(
                host: dialled.0, port: dialled.1, serverName: host, context: context, timeout: timeout
            )
            for certificate in evaluation.presentedChain {
                print("\(certificate.spkiPin)  \(certificate.subject)")
            }
            switch evaluation.trustResult {
            case .trusted:
                FileHandle.standardError.write(Data("trusted: the chain verifies for \(host)\n".utf8))
            case .untrusted(let error):
                FileHandle.standardError.write(Data("not trusted: \(error)\n".utf8))
            case .noCertificate:
                FileHandle.standardError.write(Data("not trusted: the server presented no certificate\n".utf8))
            }
        }

        static func split(_ target: String) throws -> (String, Int) {
            var host = Substring(target)
            var port = 443
            if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
                let rest = host[host.index(after: close)...]
                host = host[host.index(after: host.startIndex)..<close]
                if rest.hasPrefix(":") { port = Int(rest.dropFirst()) ?? -1 }
            } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
                port = Int(host[host.index(after: colon)...]) ?? -1
                host = host[..<colon]
            }
            guard !host.isEmpty, (1...65535).contains(port) else {
                throw CommandFailure.user("not a HOST[:PORT]: \(target)")
            }
            return (String(host), port)
        }

        /// Connects to `host:port`, shakes hands sending `serverName`, and returns the server's
        /// evaluation (never sends data).
        static func handshake(
            host: String, port: Int, serverName: String, context: TLSContext, timeout: Int
        ) async throws -> TLSPeerEvaluation {
            let group = MultiThreadedEventLoopGroup.singleton
            let loop = group.next()
            let result = loop.makePromise(of: TLSPeerEvaluation.self)
            let channel: any Channel
            do {
                channel = try await ClientBootstrap(group: loop)
                    .connectTimeout(.seconds(Int64(timeout)))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            _ = try channel.pipeline.syncOperations.addTLSClientHandler(context: context, serverHostname: serverName)
                            try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(result: result))
                        }
                    }
                    .connect(host: host, port: port)
                    .get()
            } catch {
                result.fail(error)  // nobody waits for it, but a promise must not be left pending
                throw CommandFailure.user("cannot connect to \(host):\(port): \(error)")
            }
            defer { channel.close(promise: nil) }
            do {
                return try await result.futureResult.get()
            } catch {
                throw CommandFailure.user("TLS handshake with \(host):\(port) failed: \(error)")
            }
        }
    }
}

/// Completes the promise with the handshake's evaluation, or fails it with the handshake's error.
private final class HandshakeWatcher: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let result: EventLoopPromise<TLSPeerEvaluation>
    /// Only touched on the channel's event loop.
    private var completed = false

    init(result: EventLoopPromise<TLSPeerEvaluation>) { self.result = result }

    private func complete(_ outcome: Result<TLSPeerEvaluation, any Error>) {
        guard !completed else { return }
        completed = true
        result.completeWith(outcome)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let done = event as? TLSHandshakeCompleted { complete(.success(done.evaluation)) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { complete(.failure(error)) }

    func channelInactive(context: ChannelHandlerContext) { complete(.failure(TLSError.handshakeFailed)) }
}
