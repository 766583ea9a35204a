import Foundation
public import Logging
import NIOConcurrencyHelpers
public import TollgateTLS

/// TLS interception: the local CA, the server certificates minted from it per host, and the hosts
/// whose clients refused one.
///
/// A CONNECT to a host whose rule says `intercept: true` is answered `200`, then the proxy
/// terminates the client's TLS with a leaf minted for that host (SAN = the CONNECT host, valid for
/// ``leafLifetime``, signed by the CA) and serves the requests inside like plain ones
/// (``ListenerMode/intercepted(origin:)``). Minted leaves share one key (as mitmproxy's do): a new
/// host costs a signature, not a key generation. Each host's server context is kept until its leaf
/// is within ``renewalMargin`` of its end (at most ``capacity`` hosts; the oldest goes first).
///
/// A client that refuses the minted certificate (a pinned client, or one that does not trust the CA)
/// ends the handshake with an alert; the host is then remembered for that client address for the
/// life of the process, and its CONNECTs to the host are tunnelled untouched
/// (``tunnelsUntouched(_:for:)``), as Squid's `ssl_bump splice` would for it. Other clients are
/// still intercepted: one build container without the CA does not turn caching off for the rest.
///
/// Thread-safe: connections on every event loop share one interceptor.
public final class Interceptor: Sendable {
    /// How long a minted leaf is valid (a day, counted from an hour back for clock skew).
    public static let leafLifetime: TimeInterval = 24 * 3600
    /// A cached leaf with less than this left is minted again.
    public static let renewalMargin: TimeInterval = 3600
    /// A CA that ends within this long is warned about at start-up.
    public static let expiryWarning: TimeInterval = 30 * 86_400
    /// Where refusals of minted certificates are logged (`notice`).
    public static let logger = Logger(label: "tollgate.interception")

    private struct Minted {
        var context: TLSContext
        var notAfter: Date
    }

    private struct State {
        var minted: [String: Minted] = [:]
        /// Hosts in the order they were minted, for eviction.
        var order: [String] = []
        /// Hosts a client refused a minted certificate for, by client address: → why.
        var refused: [Refusal: String] = [:]
        var interceptions = 0
        var leavesMinted = 0
    }

    /// The CA that signs the leaves.
    public let authority: CertificateAuthority
    /// Where the CA certificate was read from (for messages).
    public let certificatePath: String
    /// How many hosts' contexts are kept.
    public let capacity: Int
    private let leafKey: PrivateKey
    private let state = NIOLockedValueBox(State())

    /// An interceptor minting from `authority`.
    ///
    /// - Parameters:
    ///   - authority: the local CA.
    ///   - certificatePath: where its certificate lives, for messages.
    ///   - capacity: hosts whose contexts are kept; 1000 unless given.
    /// - Throws: ``OpenSSLError`` when the shared leaf key cannot be generated.
    public init(authority: CertificateAuthority, certificatePath: String = "-", capacity: Int = 1000) throws {
        self.authority = authority
        self.certificatePath = certificatePath
        self.capacity = max(1, capacity)
        self.leafKey = try PrivateKey(generating: .ecP256)
    }

    /// Loads the CA of `directory` (`ca.pem`, `ca.key` as `tollgate ca init` writes them).
    ///
    /// - Throws: ``InterceptorError`` naming the file and what is wrong: missing (with the command
    ///   that creates it), unreadable, a key readable by others than its owner, an expired CA.
    public static func load(directory: String, now: Date = Date()) throws(InterceptorError) -> Interceptor {
        let certificatePath = directory + "/ca.pem"
        let keyPath = directory + "/ca.key"
        guard FileManager.default.fileExists(atPath: certificatePath) else {
            throw InterceptorError("no interception CA in \(directory) (create one with: tollgate ca init --dir \(directory))")
        }
        if let attributes = try? FileManager.default.attributesOfItem(atPath: keyPath),
            let mode = attributes[.posixPermissions] as? Int, mode & 0o077 != 0
        {
            throw InterceptorError(
                "\(keyPath) is readable by others (mode \(String(mode, radix: 8))): chmod 600 \(keyPath)"
            )
        }
        let authority: CertificateAuthority
        do {
            authority = try CertificateAuthority(certificatePEMFile: certificatePath, privateKeyPEMFile: keyPath)
        } catch {
            throw InterceptorError("cannot load the interception CA from \(directory): \(error)")
        }
        guard authority.certificate.notAfter > now else {
            throw InterceptorError(
                "the interception CA \(certificatePath) expired on \(Self.day(authority.certificate.notAfter)) "
                    + "(replace it: tollgate ca init --force --dir \(directory))"
            )
        }
        do {
            return try Interceptor(authority: authority, certificatePath: certificatePath)
        } catch {
            throw InterceptorError("cannot prepare interception: \(error)")
        }
    }

    /// A warning when the CA ends within ``expiryWarning`` of `now`, else nil.
    public func expiryWarning(now: Date = Date()) -> String? {
        let end = authority.certificate.notAfter
        guard end.timeIntervalSince(now) < Self.expiryWarning else { return nil }
        let days = Int(end.timeIntervalSince(now) / 86_400)
        return "the interception CA \(certificatePath) expires on \(Self.day(end)) (in \(days) days): "
            + "create a new one with tollgate ca init --force and give clients the new certificate"
    }

    /// The server context presenting a leaf for `host`, minted on first use and again near its end.
    ///
    /// - Throws: ``OpenSSLError`` when the host cannot go in a certificate or signing fails.
    public func serverContext(for host: String, now: Date = Date()) throws -> TLSContext {
        let key = host.lowercased()
        if let minted = state.withLockedValue({ $0.minted[key] }),
            minted.notAfter.timeIntervalSince(now) > Self.renewalMargin
        {
            return minted.context
        }
        // The leaf never outlives its CA: a client would refuse the chain at the CA's end anyway.
        let caEnd = authority.certificate.notAfter.timeIntervalSince(now)
        let lifetime = min(Self.leafLifetime, max(caEnd + 3600, 60))
        let identity = try authority.issueLeaf(for: host, key: leafKey, validity: lifetime, now: now)
        var configuration = TLSConfiguration.makeServerConfiguration(identity: identity)
        configuration.applicationProtocols = ClientProtocolSelection.offeredProtocols
        // A client that tunnels to the host again resumes (each host's context has its own ticket
        // keys, so a ticket is good for its host alone).
        configuration.issuesSessionTickets = true
        let context = try TLSContext(configuration: configuration)
        state.withLockedValue { state in
            state.leavesMinted += 1
            if state.minted.updateValue(Minted(context: context, notAfter: identity.certificate.notAfter), forKey: key)
                == nil
            {
                state.order.append(key)
            }
            while state.order.count > capacity {
                state.minted[state.order.removeFirst()] = nil
            }
        }
        return context
    }

    /// A host one client refused the minted certificate for.
    private struct Refusal: Hashable {
        let client: String
        let host: String
    }

    /// At most this many refusals are remembered (clients × hosts); past it they are forgotten
    /// all at once, and a client that still refuses is remembered again at its next CONNECT.
    static let refusalCapacity = 10_000

    /// Whether `client`'s CONNECTs to `host` go through untouched because it refused the host's
    /// minted leaf.
    public func tunnelsUntouched(_ host: String, for client: String) -> Bool {
        state.withLockedValue { $0.refused.isEmpty ? false : $0.refused[Refusal(client: client, host: host.lowercased())] != nil }
    }

    /// Remembers that `client` refused the leaf minted for `host`; returns false when that was
    /// already remembered.
    @discardableResult
    public func rememberRefusal(of host: String, by client: String, reason: String) -> Bool {
        state.withLockedValue { state in
            if state.refused.count >= Self.refusalCapacity { state.refused.removeAll() }
            return state.refused.updateValue(reason, forKey: Refusal(client: client, host: host.lowercased())) == nil
        }
    }

    /// Counts a CONNECT answered by interception.
    func noteInterception() {
        state.withLockedValue { $0.interceptions += 1 }
    }

    /// The interception figures `/metrics` reports: CONNECTs intercepted, leaves minted, hosts
    /// tunnelled untouched after a refusal.
    public var figures: (interceptions: Int, leavesMinted: Int, refusedHosts: Int) {
        state.withLockedValue { ($0.interceptions, $0.leavesMinted, Set($0.refused.keys.map(\.host)).count) }
    }

    /// The hosts tunnelled untouched for some client after a refusal, sorted.
    public var refusedHosts: [String] {
        state.withLockedValue { Set($0.refused.keys.map(\.host)).sorted() }
    }

    private static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }
}

/// Interception cannot start: the message names the file and what to do.
public struct InterceptorError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
