import Foundation
import NIOConcurrencyHelpers
import Synchronization
public import NIOCore
public import NIOPosix
public import TollgateHTTP
public import TollgateSession

/// The policy in force in a running proxy: the current rules, one ``Session`` per named session,
/// and reloading (SIGHUP, `POST /config/reload`).
///
/// ```swift
/// let runtime = PolicyRuntime(configuration: configuration, sourceFile: path)
/// let route = runtime.route(url)                 // per request
/// if route.isDenied { /* 403 host-denied */ }
/// let task = try route.session.dataTask(with: request)
/// task.delegate = exchange; task.resume()
/// let problems = runtime.reload()                // SIGHUP: empty when the new rules are in force
/// runtime.shutdown()
/// ```
///
/// Reload semantics (``apply(_:)``):
/// - requests routed after it get the new rules; a task keeps the session it was created on;
/// - a session whose ``SessionSettings`` did not change is kept, with its connection pool and
///   every task in flight; its ``PolicySessionDelegate`` decides from the new rules from then on;
/// - a session that was removed, or whose settings changed, is replaced (a changed one by a new
///   session of the same name) and the old one gets `finishTasksAndInvalidate()`: its tasks in
///   flight finish under the rules they started with, then it closes its connections. Until
///   then it is listed in ``retiringSessions``.
///
/// Thread-safe. ``route(_:)`` takes a lock only to read one reference; applies are serialized.
public final class PolicyRuntime: Sendable {
    /// Called for each session before it is created, with its name and settings, to finish its
    /// configuration: attach the response cache and the cookie store, set the idle timeout, ….
    public typealias SessionPreparation =
        @Sendable (_ name: String, _ settings: SessionSettings, _ configuration: inout SessionConfiguration) -> Void

    /// The file ``reload()`` re-reads; nil when running on a configuration without a file (the
    /// embedded default).
    public let sourceFile: String?
    /// The configuration the runtime was made with: what `serve` opened its listeners, cache,
    /// access log and interception CA from, which no reload changes.
    public let startedConfiguration: PolicyConfiguration
    /// Where the sessions run their tasks.
    public let eventLoopGroup: any EventLoopGroup
    /// The loader ``reload()`` uses (the one `check-config` uses by default).
    public let loader: PolicyLoader
    /// What every session's trust decisions share: the `tollgate.trust` logger, the failure
    /// counter and the files trust settings name. Kept across reloads.
    public let trustEnvironment: TrustEnvironment

    private let prepare: SessionPreparation
    /// Told of every task's progress and end, when the task's own delegate is not (`warm`).
    private let taskObserver: (any DownloadTaskDelegate & SessionDelegate)?
    private let current: NIOLockedValueBox<Snapshot>
    /// Bumped after each apply stores its snapshot (``generation``).
    private let applied = Atomic<Int>(0)
    /// Sessions replaced by a reload that have tasks still running, by identity.
    private let retiring: NIOLockedValueBox<[ObjectIdentifier: Session]>
    /// Serializes apply, reload and shutdown (never held by `route`).
    private let applying = NIOLock()
    private let isShutDown = NIOLockedValueBox(false)

    /// The rules and sessions in force, replaced whole by each apply.
    private final class Snapshot: Sendable {
        let configuration: PolicyConfiguration
        let decisions: PolicyDecisions
        /// Every named session, `default` included.
        let sessions: [String: Session]
        let delegates: [String: PolicySessionDelegate]
        let defaultSession: Session

        init(
            configuration: PolicyConfiguration,
            decisions: PolicyDecisions,
            sessions: [String: Session],
            delegates: [String: PolicySessionDelegate],
            defaultSession: Session
        ) {
            self.configuration = configuration
            self.decisions = decisions
            self.sessions = sessions
            self.delegates = delegates
            self.defaultSession = defaultSession
        }
    }

    /// A runtime for `configuration`, creating one session per named session.
    ///
    /// - Parameters:
    ///   - configuration: the rules in force at first.
    ///   - sourceFile: the file ``reload()`` re-reads; nil for none.
    ///   - eventLoopGroup: where the sessions run their tasks.
    public convenience init(
        configuration: PolicyConfiguration,
        sourceFile: String?,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.init(
            configuration: configuration,
            sourceFile: sourceFile,
            eventLoopGroup: eventLoopGroup,
            loader: PolicyLoader(),
            prepareSession: { _, _, _ in }
        )
    }

    /// A runtime whose sessions' configurations `prepareSession` finishes (stores, timeouts).
    ///
    /// - Parameters:
    ///   - configuration: the rules in force at first.
    ///   - sourceFile: the file ``reload()`` re-reads; nil for none.
    ///   - eventLoopGroup: where the sessions run their tasks.
    ///   - loader: how ``reload()`` reads the file.
    ///   - trustEnvironment: where trust events are logged and counted; a new one logging to
    ///     `tollgate.trust` unless given.
    ///   - prepareSession: called for every session created, now and on each apply that creates
    ///     one, after ``SessionSettings/makeSessionConfiguration(name:)``.
    ///   - taskObserver: told of the completion, download progress and resumption of every
    ///     task that has no delegate of its own answering them, and of background sessions'
    ///     `didFinishEvents` (see ``PolicySessionDelegate/init(sessionName:decisions:trustEnvironment:observer:onInvalidate:)``).
    public init(
        configuration: PolicyConfiguration,
        sourceFile: String?,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        loader: PolicyLoader = PolicyLoader(),
        trustEnvironment: TrustEnvironment = TrustEnvironment(),
        taskObserver: (any DownloadTaskDelegate & SessionDelegate)? = nil,
        prepareSession: @escaping SessionPreparation
    ) {
        self.taskObserver = taskObserver
        self.sourceFile = sourceFile
        self.eventLoopGroup = eventLoopGroup
        self.loader = loader
        self.trustEnvironment = trustEnvironment
        self.prepare = prepareSession
        let retiring = NIOLockedValueBox<[ObjectIdentifier: Session]>([:])
        self.retiring = retiring
        let (snapshot, _) = Self.makeSnapshot(
            configuration,
            keepingFrom: nil,
            prepare: prepareSession,
            eventLoopGroup: eventLoopGroup,
            retiring: retiring,
            trust: trustEnvironment,
            observer: taskObserver
        )
        self.current = NIOLockedValueBox(snapshot)
        self.startedConfiguration = configuration
    }

    // MARK: reading

    /// The sections whose values in the configuration in force differ from what the process
    /// started with in what only a restart applies
    /// (``PolicyConfiguration/restartOnlyChanges(to:)``): after a reload, what is still waiting.
    public var sectionsAwaitingRestart: [String] { startedConfiguration.restartOnlyChanges(to: configuration) }

    /// ``sectionsAwaitingRestart`` in words, as `serve` and `POST /config/reload` report them after a
    /// reload; nil when nothing waits.
    public var awaitingRestartNotice: String? {
        let sections = sectionsAwaitingRestart
        guard !sections.isEmpty else { return nil }
        return "changed in the file but kept as started until a restart: " + sections.joined(separator: ", ")
    }

    /// The configuration in force.
    public var configuration: PolicyConfiguration { snapshot.configuration }

    /// The `limits` of the configuration in force (without copying the rest of it).
    public var limits: PolicyConfiguration.Limits { snapshot.configuration.limits }

    /// The `access` rules of the configuration in force (without copying the rest of it).
    public var access: PolicyConfiguration.Access { snapshot.configuration.access }

    /// `access.connection-limit` in force, read under the lock without copying the snapshot (a
    /// listener reads it for every connection it accepts).
    public var connectionLimit: Int? { current.withLockedValue { $0.configuration.access.connectionLimit } }

    /// How many times rules were applied since the runtime started: what a reader that keeps
    /// something it derived from ``configuration`` compares, so it rebuilds only after a change
    /// (an atomic load, where reading the configuration takes a lock and copies). Bumped after
    /// the new rules are in force, so a reader that sees a new generation reads new rules.
    public var generation: Int { applied.load(ordering: .acquiring) }

    /// The decisions in force (for `explain`-like answers without a session).
    public var decisions: PolicyDecisions { snapshot.decisions }

    /// The current named sessions, `default` included (for `/tasks`).
    public var sessions: [String: Session] { snapshot.sessions }

    /// Sessions a reload replaced whose tasks have not all finished yet, each named by its
    /// `sessionDescription` (for `/tasks`: their tasks are still running). A session leaves this
    /// list once it is invalidated.
    public var retiringSessions: [Session] {
        retiring.withLockedValue { Array($0.values) }
    }

    private var snapshot: Snapshot { current.withLockedValue { $0 } }

    /// TLS trust failures by host since the runtime started, for `/metrics` ("TLS trust failures by
    /// host"): refused server-trust challenges and reported pin mismatches
    /// (``TrustFailureCounter/byHost``).
    public var trustFailures: [String: Int] { trustEnvironment.failures.byHost }

    /// The counter behind ``trustFailures``, with the counts by kind too.
    public var trustFailureCounter: TrustFailureCounter { trustEnvironment.failures }

    /// The session and decisions for a request to `url` under the rules in force.
    public func route(_ url: HTTPURL) -> PolicyRoute {
        route(host: url.host, port: url.effectivePort)
    }

    /// The session and decisions for a CONNECT to `host:port` under the rules in force.
    public func route(host: String, port: Int) -> PolicyRoute {
        let snapshot = self.snapshot
        let (decision, holds) = snapshot.decisions.decideWithValidity(host: host, port: port)
        let session = snapshot.sessions[decision.sessionName] ?? snapshot.defaultSession
        return PolicyRoute(session: session, sessionName: decision.sessionName, decision: decision, holds: holds)
    }

    // MARK: changing

    /// Re-reads ``sourceFile`` and applies it. On problems the rules in force stay and the
    /// problems are returned (`FILE:LINE: KEY: message` each); empty means the new rules are in
    /// force. Without a source file there is nothing to re-read: nothing changes, and the
    /// answer is empty.
    @discardableResult
    public func reload() -> [PolicyLoader.Problem] {
        guard let sourceFile else { return [] }
        return applying.withLock {
            let configuration: PolicyConfiguration
            do throws(PolicyLoader.Failure) {
                configuration = try loader.load(contentsOf: sourceFile)
            } catch {
                return error.problems
            }
            applyLocked(configuration)
            return []
        }
    }

    /// Puts `configuration` in force: new requests route with its rules; sessions are kept where
    /// their settings did not change, and the others are created anew, the old ones finishing
    /// their tasks and invalidated. Does nothing after ``shutdown()``.
    public func apply(_ configuration: PolicyConfiguration) {
        applying.withLock { applyLocked(configuration) }
    }

    private func applyLocked(_ configuration: PolicyConfiguration) {
        guard !isShutDown.withLockedValue({ $0 }) else { return }
        let old = snapshot
        // Client identity and root bundle files are read again (a rotated or fixed file).
        trustEnvironment.files.removeAll()
        let (next, retired) = Self.makeSnapshot(
            configuration,
            keepingFrom: old,
            prepare: prepare,
            eventLoopGroup: eventLoopGroup,
            retiring: retiring,
            trust: trustEnvironment,
            observer: taskObserver
        )
        current.withLockedValue { $0 = next }
        applied.add(1, ordering: .releasing)
        retire(retired)
        // Trust is decided when a connection is made: if what decides it changed, the kept
        // sessions' idle connections close, so the next request is checked under the new rules.
        // So they do whenever a rule names revocation lists: a reload is how a refreshed list,
        // same path and new contents, is put in force, and it must reach connections made earlier.
        // And so they do when where connections go changed (`connect-to`): a backend taken out
        // gets no more requests on the connections it kept, one added gets its share of the h2
        // streams at once (the pool reads the targets again when it retires its connections).
        let checksRevocation = configuration.hosts.contains { !$0.trust.crls.isEmpty }
        let targetsChanged = Self.connectionTargets(old.configuration) != Self.connectionTargets(configuration)
        if checksRevocation || targetsChanged || Self.trustSettings(old.configuration) != Self.trustSettings(configuration) {
            let retiredSessions = Set(retired.map(ObjectIdentifier.init))
            for session in next.sessions.values where !retiredSessions.contains(ObjectIdentifier(session)) {
                session.flush()
            }
        }
        if targetsChanged {
            // Targets no rule of a kept session names any more leave its record (and `/upstreams`).
            for (name, session) in next.sessions {
                session.keepConnectionTargets(Set(configuration.hosts.filter { $0.session == name }.flatMap(\.connectTo)))
            }
        }
    }

    /// Lets every session finish its tasks and be invalidated (`finishTasksAndInvalidate()`);
    /// later applies and reloads change nothing. Routes made after it carry invalidated sessions,
    /// on which creating a task fails with `sessionInvalidated`.
    public func shutdown() {
        applying.withLock {
            let first = isShutDown.withLockedValue { done -> Bool in
                defer { done = true }
                return !done
            }
            guard first else { return }
            for session in snapshot.sessions.values { session.finishTasksAndInvalidate() }
        }
    }

    // MARK: sessions

    /// The snapshot for `configuration`, keeping the sessions of `old` whose settings did not
    /// change; and the sessions of `old` that are not kept.
    private static func makeSnapshot(
        _ configuration: PolicyConfiguration,
        keepingFrom old: Snapshot?,
        prepare: SessionPreparation,
        eventLoopGroup: any EventLoopGroup,
        retiring: NIOLockedValueBox<[ObjectIdentifier: Session]>,
        trust: TrustEnvironment,
        observer: (any DownloadTaskDelegate & SessionDelegate)?
    ) -> (snapshot: Snapshot, retired: [Session]) {
        let decisions = PolicyDecisions(configuration: configuration)
        var sessions: [String: Session] = [:]
        var delegates: [String: PolicySessionDelegate] = [:]
        var kept: Set<ObjectIdentifier> = []
        for name in configuration.sessionNames {
            let settings = configuration.session(named: name) ?? SessionSettings()
            if let old, old.configuration.session(named: name) == settings,
                let session = old.sessions[name], let delegate = old.delegates[name]
            {
                delegate.update(decisions)
                sessions[name] = session
                delegates[name] = delegate
                kept.insert(ObjectIdentifier(session))
                continue
            }
            // A retired session leaves `retiringSessions` once its last task has finished.
            let delegate = PolicySessionDelegate(sessionName: name, decisions: decisions, trustEnvironment: trust, observer: observer) {
                session in
                retiring.withLockedValue { $0[ObjectIdentifier(session)] = nil }
            }
            var sessionConfiguration = settings.makeSessionConfiguration(name: name)
            // Each host's roots and client identity, from the rules the delegate holds now (a
            // reload that keeps the session changes them too); `prepare` may wrap it.
            sessionConfiguration.tlsConfiguration = { host, port, defaults in
                delegate.tlsConfiguration(host: host, port: port, defaults: defaults)
            }
            // A rule's `connect-to`, under the rules in force when the connection is made.
            sessionConfiguration.connectionTargets = { host, port in
                delegate.decisions.decide(host: host, port: port).connectTo
            }
            // The rules' `connect-to-check`s for this session's targets, under the rules in force at each check.
            sessionConfiguration.connectionTargetChecks = { delegate.decisions.connectionTargetChecks(session: name) }
            // A rule's `cache.key` normalization, under the rules in force when the task looks up.
            sessionConfiguration.cacheKeyURL = { url in delegate.decisions.cacheKeyURL(for: url) }
            // A rule's `cache.stale-if-error`, asked only when a stale response is revalidated.
            sessionConfiguration.staleIfErrorWindow = { url in delegate.decisions.decide(for: url).cache.staleIfError }
            // A rule's `cache.force-ttl`: its redirects are stored without freshness of their own.
            sessionConfiguration.forcesFreshness = { url in
                if case .store(forceTTL: _?) = delegate.decisions.cacheStoreDecision(for: url) { return true }
                return false
            }
            prepare(name, settings, &sessionConfiguration)
            if sessionConfiguration.kind.backgroundIdentifier != nil {
                // A background session never asks its delegate about redirects: the rules'
                // answer (never to a denied host; the session's `redirects` mode) holds through this.
                sessionConfiguration.redirectFilter = { from, to in delegate.redirectAction(from: from, to: to) == .follow }
            }
            let session = Session(
                configuration: sessionConfiguration,
                delegate: delegate,
                eventLoopGroup: eventLoopGroup
            )
            session.sessionDescription = name
            sessions[name] = session
            delegates[name] = delegate
        }
        let retired = old.map { $0.sessions.values.filter { !kept.contains(ObjectIdentifier($0)) } } ?? []
        guard let defaultSession = sessions[SessionSettings.defaultName] else {
            preconditionFailure("PolicyConfiguration.sessionNames always holds \(SessionSettings.defaultName)")
        }
        let snapshot = Snapshot(
            configuration: configuration,
            decisions: decisions,
            sessions: sessions,
            delegates: delegates,
            defaultSession: defaultSession
        )
        return (snapshot, retired)
    }

    /// What decides a connection's TLS settings and trust: each rule's patterns (which rule
    /// matches), `trust` and `client-identity`, in order.
    private static func trustSettings(_ configuration: PolicyConfiguration) -> [TrustSettings] {
        configuration.hosts.map {
            TrustSettings(patterns: $0.patterns, trust: $0.trust, clientIdentity: $0.clientIdentity)
        }
    }

    /// Each rule's hosts and `connect-to` targets.
    private static func connectionTargets(_ configuration: PolicyConfiguration) -> [[String]] {
        configuration.hosts.map { $0.patterns.map(\.description) + ["->"] + $0.connectTo.map(\.ruleDescription) }
    }

    private struct TrustSettings: Equatable {
        var patterns: [HostPattern]
        var trust: HostRule.Trust
        var clientIdentity: HostRule.ClientIdentity?
    }

    private func retire(_ sessions: [Session]) {
        guard !sessions.isEmpty else { return }
        retiring.withLockedValue { retiring in
            for session in sessions { retiring[ObjectIdentifier(session)] = session }
        }
        for session in sessions { session.finishTasksAndInvalidate() }
    }
}
