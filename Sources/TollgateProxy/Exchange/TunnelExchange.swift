import Foundation
import NIOCore
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS

/// A CONNECT request: a TCP tunnel to `host:port` carried by a session stream task.
///
/// Only to the ports of `access.connect-ports` (403 `connect-port-denied` otherwise), only to a
/// destination the rules allow (403 `host-denied`), checked on the resolved address; the stream
/// task then connects to that very address, so a name cannot resolve differently between the
/// check and the connection. When the route's session has an `upstream-proxy`, the stream task
/// asks the parent for the tunnel by name instead (`CONNECT host:port`), and a name that does not
/// resolve here is left to the parent. Once connected the client gets `200 Connection Established` and a
/// ``StreamRelay`` carries bytes both ways until both sides have closed.
///
/// When the host's rule says `intercept: true` the tunnel is not opened: the client gets `200` at
/// once and its connection continues as an intercepted one (``ClientTunnelHost/beginInterception(of:context:)``),
/// unless this client refused the host's minted certificate before (``Interceptor/tunnelsUntouched(_:for:)``).
final class TunnelExchange: ClientExchange, StreamTaskDelegate, @unchecked Sendable {
    let head: ClientRequestHead
    let host: CanonicalHost
    let port: Int
    let eventLoop: any EventLoop
    let environment: ListenerEnvironment
    /// The rules in force when the tunnel was asked for (connect ports, destinations, timeout).
    let rules: ExchangeRules

    /// The client connection, which the tunnel takes over; nil once the exchange is finished.
    private var connection: (any ClientTunnelHost)?
    private var record: ExchangeRecord
    private var task: StreamTask?
    private var ownAnswer: OwnResponse?
    private var connectTimer: Scheduled<Void>?
    private var isFinished = false
    private var established = false

    init(head: ClientRequestHead, host: CanonicalHost, port: Int, connection: any ClientTunnelHost, context: ExchangeContext) {
        self.head = head
        self.host = host
        self.port = port
        self.connection = connection
        self.environment = context.environment
        self.eventLoop = context.eventLoop
        self.rules = context.rules
        self.record = ExchangeRecord(head: head, clientAddress: context.memo.clientAddress, clientTLS: context.memo.clientTLS)
        context.environment.exchangesInFlight.begin()
    }

    func start() {
        // A CONNECT carrying this proxy's own CDN-Loop member has come round to it again (through
        // parents that pass members on, as this proxy does below).
        if environment.ownListeners.hasForwarded(head.headerFields) {
            respond(ForwardExchange.loopDetected(environment.ownListeners.loopIdentifier))
            return
        }
        let connectPorts = rules.destinations.access.connectPorts
        guard connectPorts.contains(port) else {
            let allowed = connectPorts.map(String.init).joined(separator: ", ")
            respond(
                OwnResponse(
                    .connectPortDenied,
                    "CONNECT to port \(port) is not allowed (access.connect-ports: [\(allowed)])"
                )
            )
            return
        }
        let route = environment.policy.proxyRoute(forTunnelTo: host.text, port: port)
        record.route = route
        if route.isDenied {
            respond(OwnResponse(.hostDenied, "\(host.forURL):\(port) is denied by the rule \(route.ruleLabel)"))
            return
        }
        if rules.offline {
            startOffline(on: route)
            return
        }
        if route.intercepts {
            if let interceptor = environment.interceptor {
                if !interceptor.tunnelsUntouched(host.text, for: record.clientAddress) {
                    intercept(with: interceptor, route: route)
                    return
                }
            } else {
                respond(
                    OwnResponse(
                        .interceptionFailed,
                        "\(host.forURL):\(port) is to be intercepted (rule \(route.ruleLabel)), but the proxy "
                            + "runs without an interception CA (tollgate ca init, then restart)"
                    )
                )
                return
            }
        }
        let viaParent = route.session.configuration.upstreamProxy != nil
        if route.connectsElsewhere, !viaParent {
            // By name: the stream task connects to the host's `connect-to` targets and checks
            // their addresses against the destination rules.
            connect(to: host, on: route)
            return
        }
        rules.destinations.check(host, port: port, on: eventLoop) { [self] verdict in
            guard !isFinished else { return }
            switch verdict {
            case .allowed(let address):
                // Through an upstream proxy the tunnel is asked for by name: the parent resolves
                // it (and applies its own rules); the name's local addresses were checked here.
                connect(to: viaParent ? host : CanonicalHost(address), on: route)
            case .denied(let why):
                respond(OwnResponse(.hostDenied, why))
            case .unresolvable(let why):
                // A name only the parent can resolve (an internal zone, a machine without DNS):
                // the parent decides. Direct, there is nothing to connect to.
                if viaParent {
                    connect(to: host, on: route)
                } else {
                    respond(OwnResponse(.upstreamUnreachable, why))
                }
            }
        }
    }

    /// Answers 200 and turns the client's connection into an intercepted one. The destination rules
    /// are checked first (a denied host gets 403, as a tunnel would); each request inside is
    /// checked again by its own exchange. A name that does not resolve is intercepted all the same,
    /// so an offline build is served from the cache.
    private func intercept(with interceptor: Interceptor, route: ProxyRoute) {
        rules.destinations.check(host, port: port, on: eventLoop) { [self] verdict in
            intercept(with: interceptor, after: verdict)
        }
    }

    private func intercept(with interceptor: Interceptor, after verdict: DestinationCheck.Verdict) {
        guard !isFinished else { return }
        if case .denied(let why) = verdict {
            respond(OwnResponse(.hostDenied, why))
            return
        }
        let context: TLSContext
        do {
            context = try interceptor.serverContext(for: host.text)
        } catch {
            respond(OwnResponse(.interceptionFailed, "cannot mint a certificate for \(host.text): \(error)"))
            return
        }
        guard let connection, connection.isActive else {
            finish()
            return
        }
        record.status = 200
        interceptor.noteInterception()
        finish()
        connection.beginInterception(
            of: HTTPURL(scheme: "https", host: host.text, port: port == 443 ? nil : port),
            context: context
        )
    }

    /// Offline: an intercepted host is intercepted without a lookup (its requests are then served
    /// from the cache); any other tunnel needs the network and is answered `504 offline-miss`.
    private func startOffline(on route: ProxyRoute) {
        guard route.intercepts, let interceptor = environment.interceptor, !interceptor.tunnelsUntouched(host.text, for: record.clientAddress) else {
            let authority = "\(host.forURL):\(port)"
            environment.offline.misses.record(method: "CONNECT", url: authority, reason: .tunnel)
            respond(
                OwnResponse(
                    .offlineMiss,
                    "offline: CONNECT \(authority): a tunnel needs the network (offline, only hosts whose rule "
                        + "says intercept: true are served, from the cache)"
                )
            )
            return
        }
        intercept(with: interceptor, after: rules.destinations.offlineVerdict(for: host, port: port))
    }

    private func connect(to address: CanonicalHost, on route: ProxyRoute) {
        let task: StreamTask
        do {
            task = try route.session.streamTask(withHostName: address.text, port: port, on: eventLoop)
        } catch  where error.code == .sessionInvalidated {
            // A reload retired the session between routing and now: route again, once.
            let fresh = environment.policy.proxyRoute(forTunnelTo: host.text, port: port)
            guard fresh.session !== route.session else {
                respond(OwnResponse(for: error))
                return
            }
            record.route = fresh
            connect(to: address, on: fresh)
            return
        } catch {
            respond(OwnResponse(for: error))
            return
        }
        self.task = task
        task.delegate = self
        // Through a parent proxy, the CONNECT carries the client's CDN-Loop members and this
        // proxy's own, so a parent that leads back here is found out.
        var loop = HeaderFields()
        for value in head.headerFields.values(for: .cdnLoop) { loop.add(name: .cdnLoop, value: value) }
        loop.add(name: .cdnLoop, value: environment.ownListeners.loopIdentifier)
        task.connectHeaderFields = loop
        task.resume()
        let timeout = rules.upstreamTimeout
        connectTimer = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            guard !isFinished, !established else { return }
            ownAnswer = OwnResponse(
                .upstreamTimeout,
                "\(host.forURL):\(port) did not accept a connection within \(timeout)"
            )
            task.cancel()
        }
        // An empty write completes once the connection is made (or fails with the task).
        task.write(ByteBuffer(), timeout: .zero) { [self] error in
            eventLoop.execute { [self] in if error == nil { tunnelEstablished(task) } }
        }
    }

    private func tunnelEstablished(_ task: StreamTask) {
        guard !isFinished, !established, let connection, connection.isActive else {
            task.cancel()
            return
        }
        established = true
        connectTimer?.cancel()
        record.status = 200
        let relay = StreamRelay(stream: task, connection: connection, eventLoop: eventLoop, idleTimeout: rules.tunnelIdleTimeout) {
            [self] totals, _ in
            record.bodyBytes = totals.toClient
            record.requestBodyBytes = totals.toUpstream
            record.relayEnd = totals.end
            record.upstreamBytesReceived = totals.toClient
            record.upstreamBytesSent = totals.toUpstream
            finish()
        }
        task.delegate = relay
        connection.sendInterim(HTTPResponseHead(status: 200, reason: "Connection Established"))
        connection.startRelay(relay)
    }

    // MARK: before the tunnel

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        guard !isFinished, !established else { return }
        connectTimer?.cancel()
        let answer =
            ownAnswer ?? error.map { OwnResponse(for: $0) }
            ?? OwnResponse(.upstreamUnreachable, "the connection to \(host.forURL):\(port) closed")
        respond(answer)
    }

    func clientBodyReceived(_ buffer: ByteBuffer) {}

    func clientRequestEnded() {}

    func clientRequestFailed(_ error: ClientRequestError) {
        guard !isFinished, !established else { return }
        task?.cancel()
        respond(error.answer)
    }

    func clientClosed() {
        guard !isFinished, !established else { return }
        task?.cancel()
        finish()
    }

    func clientWritabilityChanged(_ writable: Bool) {}

    // MARK: ending

    private func respond(_ answer: OwnResponse) {
        guard connection?.isActive == true else {
            finish()
            return
        }
        record.status = answer.status
        record.errorCode = answer.code.rawValue
        record.bodyBytes = Int64(answer.body.readableBytes)
        finish()?.sendOwnAnswer(answer, close: true)
    }

    @discardableResult
    private func finish() -> (any ClientTunnelHost)? {
        guard !isFinished else { return nil }
        isFinished = true
        connectTimer?.cancel()
        let connection = self.connection
        self.connection = nil
        let ended = Date()
        record.isTunnel = true
        environment.accessLog.record(record.entry(ended: ended))
        environment.exchangesInFlight.end()
        // The rules in force when the tunnel was asked for: copying the whole configuration per
        // tunnel took the policy's lock for one number.
        environment.metrics.noteFinished(record, url: nil, ended: ended, harEntries: rules.harEntries)
        return connection
    }
}
