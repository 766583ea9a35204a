import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// What one client connection remembers from request to request, because a kept-alive client
/// mostly asks the same things again: the exchange rules, the last route, the last host parsed,
/// the proxy's forwarding lines, the last `Cache-Status` text — and the facts about the client,
/// fixed for the connection.
///
/// One per connection, shared by reference with each exchange it starts (``ExchangeContext``).
/// Used on the connection's event loop only.
final class ConnectionMemo {
    /// The client's address as text ("-" when unknown).
    let clientAddress: String
    /// What `access.rate-limit` counts this client as (``ClientLimitKey``): its address, or its
    /// IPv6 network.
    let clientLimitKey: String
    /// The client connects over loopback (``StoredBodyTransfer``).
    let clientIsLoopback: Bool
    /// Whether the client is one of `access.trusted-forwarders`, whose forwarding fields are kept.
    let clientTrustedForwarder: Bool
    /// Whether the client is one of `access.purge-clients`; nil when that is not set.
    let clientMayPurge: Bool?
    /// The `access.connection-limit` the client was over when this connection opened (its
    /// requests are answered `429 too-many-connections`); nil when it was not.
    let overConnectionLimit: Int?
    /// What the connection's TLS handshake settled (its version, the client's certificate) once
    /// it is done; nil for plain HTTP. Exchanges log it, a reverse listener says
    /// `X-Forwarded-Proto: https` with it, and passes the certificate on when told to.
    var clientTLS: ClientTLS?

    /// The rules the connection's exchanges go by, until the policy changes (``exchangeRules(_:)``).
    private var rules: ExchangeRules?
    /// The last request's route, for the next to the same host and port (``route(for:policy:)``).
    private var keptRoute: KeptRoute?
    /// The last host parsed for this connection's requests.
    private var canonicalHostAnswer = LastAnswer<String, CanonicalHost>()
    /// The lines the proxy last added to a forwarded request.
    private var forwardingLinesAnswer = LastAnswer<ForwardingLinesKey, HeaderFields>()
    /// The last `Cache-Status` value written and the outcome it describes.
    private var cacheStatusAnswer = LastAnswer<CacheOutcome, String>()

    /// What the forwarding lines depend on besides the client's address, which is fixed.
    private struct ForwardingLinesKey: Equatable {
        let minorVersion: Int
        let originalHost: String?
    }

    init(
        clientAddress: String, clientIsLoopback: Bool, clientTrustedForwarder: Bool, clientMayPurge: Bool? = nil,
        overConnectionLimit: Int? = nil, clientLimitKey: String? = nil
    ) {
        self.overConnectionLimit = overConnectionLimit
        self.clientAddress = clientAddress
        self.clientLimitKey = clientLimitKey ?? clientAddress
        self.clientIsLoopback = clientIsLoopback
        self.clientTrustedForwarder = clientTrustedForwarder
        self.clientMayPurge = clientMayPurge
    }

    /// The rules in force for an exchange starting now: kept from the last exchange unless a
    /// reload changed the policy since (then the listener's, ``ListenerMemo``).
    func exchangeRules(_ environment: ListenerEnvironment) -> ExchangeRules {
        if let rules, rules.generation == environment.policy.generation { return rules }
        let fresh = environment.memo.exchangeRules(environment)
        rules = fresh
        return fresh
    }

    /// The policy's route for a request to `url`: the last request's when it was to the same
    /// host and port and still holds (``KeptRoute``), this connection's or else its listener's.
    func route(for url: HTTPURL, environment: ListenerEnvironment) -> ProxyRoute {
        let policy = environment.policy
        let listenerMemo = environment.memo
        let generation = policy.generation
        let port = url.effectivePort
        if let keptRoute, keptRoute.answers(host: url.host, port: port, generation: generation) {
            return keptRoute.route
        }
        if let shared = listenerMemo.route(host: url.host, port: port, generation: generation) {
            keptRoute = shared
            return shared.route
        }
        let route = policy.proxyRoute(for: url)
        keptRoute = route.holds == nil ? nil : KeptRoute(generation: generation, host: url.host, port: port, route: route)
        if let keptRoute { listenerMemo.keep(keptRoute) }
        return route
    }

    /// `CanonicalHost.parse(text)`, remembered for the next request of this connection.
    func canonicalHost(_ text: String) throws(CanonicalHost.Invalid) -> CanonicalHost {
        try canonicalHostAnswer.value(for: text) { () throws(CanonicalHost.Invalid) in try CanonicalHost.parse(text) }
    }

    /// The lines the proxy adds to a request it forwards (Via, and X-Forwarded-* on a reverse
    /// listener): `make`'s, remembered for the connection's next request, since they depend only
    /// on the client's address (fixed), the HTTP version and the Host the client sent (the same
    /// on a kept-alive connection, as a rule).
    func forwardingLines(minorVersion: Int, originalHost: String?, make: () -> HeaderFields) -> HeaderFields {
        forwardingLinesAnswer.value(for: ForwardingLinesKey(minorVersion: minorVersion, originalHost: originalHost), make: make)
    }

    /// The `Cache-Status` value for `outcome`: the last response's again when its outcome was the
    /// same (a connection's responses mostly are; the text was built per response).
    func cacheStatus(for outcome: CacheOutcome) -> String {
        cacheStatusAnswer.value(for: outcome) { outcome.cacheStatus() }
    }
}
