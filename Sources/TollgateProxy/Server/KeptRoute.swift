import Foundation
import TollgateHTTP
import TollgatePolicy

/// The route a client connection's last request got, kept for its next requests to the same host
/// and port (a reverse listener's requests all go to one upstream; a forward client's mostly to
/// a few hosts).
///
/// Routing per request took the policy's lock and the decisions' lock, hashed the host for the
/// remembered decision and the session name for its session: a few percent of a cache hit.
/// A route is kept only when the policy says for how long it holds (``ProxyRoute/holds``), and
/// only while the policy's ``ProxyPolicy/generation`` stays.
final class KeptRoute: Sendable {
    let generation: Int
    let host: String
    let port: Int
    let route: ProxyRoute

    init(generation: Int, host: String, port: Int, route: ProxyRoute) {
        self.generation = generation
        self.host = host
        self.port = port
        self.route = route
    }

    /// Whether this is the route for `host:port` under the rules of `generation` now.
    func answers(host: String, port: Int, generation: Int) -> Bool {
        guard self.generation == generation, self.port == port, self.host == host, let holds = route.holds else {
            return false
        }
        return PolicyDecisions.holds(holds)
    }
}
