import ArgumentParser
import Foundation
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession

/// `tollgate serve [--config FILE] [--listen HOST:PORT [--reverse URL]] [--offline [--manifest FILE]]
/// [--miss-report FILE]`: runs the proxy.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the proxy.",
        discussion: """
            Runs the listeners of the configuration file (--config), or of the embedded default: a forward \
            proxy on 127.0.0.1:3128 and the admin API on 127.0.0.1:9090 (when 9090 is taken, the proxy \
            starts without it). Prints one line `listening on ADDRESS (MODE)` per listener once it accepts \
            connections, and writes the access log where `log.access` says. SIGHUP reloads the configuration \
            file (problems go to standard error and the rules in force stay) and opens a file access log \
            again; SIGUSR1 only opens the access log again (after logrotate). SIGTERM or SIGINT: stops \
            accepting, lets requests in flight finish (at most 10 s), exits 0. \
            --offline (or offline: true in the file): nothing goes upstream — no name lookup, connection or \
            TLS handshake; stored responses are served whatever their age and a miss is answered \
            504 offline-miss (a cache directory the proxy may not write is opened read-only). --manifest FILE (from tollgate warm --manifest): serve only what it lists, each \
            entry checked against the cache at start and each body against its SHA-256 while it is sent. \
            Sockets passed by systemd (socket activation: LISTEN_PID, LISTEN_FDS) are served by the \
            listener whose address (an IP address and port) is theirs; one that no listener names is an error.
            """
    )

    @Option(help: ArgumentHelp("The configuration file (YAML).", valueName: "file"))
    var config: String?

    @Option(
        help: ArgumentHelp(
            "Listen on HOST:PORT instead of the configured listeners: one forward listener ([::1]:PORT for IPv6; port 0: any free port).",
            valueName: "host:port"
        )
    )
    var listen: String?

    @Option(
        help: ArgumentHelp(
            "With --listen: make that listener a reverse listener sending every request to URL.",
            valueName: "url"
        )
    )
    var reverse: String?

    @Flag(help: "Never touch the network: serve from the cache alone; a miss is 504 offline-miss.")
    var offline = false

    @Option(
        help: ArgumentHelp(
            "With --offline: serve only what this manifest (tollgate warm --manifest) lists, byte-checked.",
            valueName: "file"
        )
    )
    var manifest: String?

    @Option(
        help: ArgumentHelp("Write the requests missed offline to this file (JSON) at shutdown.", valueName: "file")
    )
    var missReport: String?

    /// How long in-flight exchanges may take to finish after SIGTERM/SIGINT.
    static let gracePeriod: Duration = .seconds(10)

    func run() async throws {
        // First: the variables are removed from the environment, which must not race a reader.
        let inherited: InheritedListeners
        do {
            inherited = try InheritedListeners.fromEnvironment()
        } catch {
            throw CommandFailure.user(error.description)
        }
        var configuration = try loadConfiguration()
        try applyOverrides(to: &configuration)
        DiagnosticLog.bootstrap(level: configuration.log.level)
        let accessLog: AccessLog
        do {
            accessLog = try AccessLog.open(configuration.log)
        } catch {
            throw CommandFailure.user(error.description)
        }
        // Two descriptors a relayed connection, more for pools and cache files: the usual soft
        // limit (1024) is a few hundred clients, the hard limit far more.
        OpenFileLimit.raiseToHardLimit()
        // Watch the signals before binding, so a signal right after the "listening" line is never lost.
        let signals = SignalWaiter([SIGTERM, SIGINT, SIGHUP, SIGUSR1])
        signal(SIGPIPE, SIG_IGN)

        let stores: SessionStores?
        do {
            // An offline proxy only reads its cache: one it may not write (a read-only mount, a
            // copy another user warmed) is opened read-only rather than refused.
            let unwritable =
                (offline || configuration.offline)
                && SessionStores.isUnwritableDirectory(configuration.cache.resolvedPath(environment: ProcessInfo.processInfo.environment))
            stores = try SessionStores(configuration: configuration, readOnly: unwritable)
        } catch let failure as CommandFailure where config == nil {
            // The embedded default must start; it runs without a cache then.
            standardError("tollgate: warning: running without a cache: \(failure.message)")
            stores = nil
        }
        let cookieCredentialStores = Self.openCookieCredentialStores()
        standardError(Self.placesLine(configuration, hasCache: stores != nil, readOnlyCache: stores?.isReadOnly ?? false))
        // The destination rules again where the session connects: a name that resolves to
        // something else than when the proxy checked it is refused there (DNS rebinding).
        let ownListeners = OwnListeners()
        let addressCheck = SessionAddressCheck(ownListeners: ownListeners)
        let cacheStores = stores?.prepareSession
        let runtime = PolicyRuntime(
            configuration: configuration,
            sourceFile: config,
            prepareSession: cookieCredentialStores.preparation(then: { name, settings, configuration in
                cacheStores?(name, settings, &configuration)
                configuration.connectionAddressCheck = addressCheck.sessionCheck
                // CONNECTs to a parent proxy carry this proxy's CDN-Loop member, as its requests do.
                configuration.upstreamProxyConnectHeaderFields = [HeaderName.cdnLoop.text: ownListeners.loopIdentifier]
                // Every proxied exchange is a data task, which a background session refuses (the
                // seeds): `configuration: background` means something to `warm` only; serve runs
                // such a session as a default one (same stores).
                if configuration.kind.backgroundIdentifier != nil { configuration.kind = .default }
            })
        )
        addressCheck.readRules(from: runtime)
        let offlineMode: OfflineMode
        do {
            offlineMode = try prepareOffline(configuration, cache: stores?.cache)
        } catch {
            runtime.shutdown()
            throw error
        }
        let listeners: ServeListeners
        do {
            listeners = try await ServeListeners.start(
                configuration,
                runtime: runtime,
                accessLog: accessLog,
                adminIsOptional: config == nil,
                cache: stores?.cache,
                interceptor: try Self.prepareInterception(configuration),
                ownListeners: ownListeners,
                offline: offlineMode,
                inherited: inherited,
                stapleArchive: Self.openStapleArchive(configuration)
            )
        } catch {
            runtime.shutdown()
            throw error
        }
        for line in listeners.listeningLines {
            // One unbuffered write per line: it is out at once, even when stdout is a pipe.
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        // systemd's Type=notify (NOTIFY_SOCKET): ready once every listener accepts.
        let serviceNotifier = ServiceNotifier.fromEnvironment(ProcessInfo.processInfo.environment)
        serviceNotifier?.ready(status: listeners.listeningLines.joined(separator: "; "))
        while let signal = await signals.next() {
            if signal == SIGUSR1 {
                await Self.reopen(accessLog)
                continue
            }
            guard signal == SIGHUP else { break }
            serviceNotifier?.reloading()
            reload(runtime)
            // logrotate's postrotate usually reloads (systemctl reload): the log file starts anew too.
            await Self.reopen(accessLog)
            serviceNotifier?.ready(status: listeners.listeningLines.joined(separator: "; "))
        }
        serviceNotifier?.stopping()
        await listeners.shutdown(gracePeriod: Self.gracePeriod)
        writeMissReport(offlineMode)
        runtime.shutdown()
        // The hits noted in memory (LRU recency, the hit and miss totals) are written, not lost.
        stores?.close()
        cookieCredentialStores.flush()
        await accessLog.flush()
    }

    /// The configuration file, or the embedded default; problems end the command (exit 1).
    private func loadConfiguration() throws -> PolicyConfiguration {
        guard let config else { return EmbeddedDefaultConfig.configuration() }
        do {
            return try PolicyLoader().load(contentsOf: config)
        } catch {
            for problem in error.problems { standardError(problem.description) }
            throw ExitCode(CommandFailure.userErrorCode)
        }
    }

    /// `--listen` (and `--reverse`) replace the configured listeners.
    private func applyOverrides(to configuration: inout PolicyConfiguration) throws {
        if reverse != nil, listen == nil {
            throw CommandFailure.user("--reverse needs --listen (the listener that becomes a reverse listener)")
        }
        guard let listen else { return }
        let address: ListenAddress
        do {
            address = try ListenAddress.parse(listen)
        } catch {
            throw CommandFailure.user("--listen: \(error)")
        }
        var upstream: HTTPURL?
        if let reverse {
            guard let url = HTTPURL(string: reverse) else {
                throw CommandFailure.user("--reverse: '\(reverse)' is not an absolute http:// or https:// URL")
            }
            upstream = url
        }
        configuration.listeners = [
            PolicyConfiguration.Listener(
                address: PolicyConfiguration.Address(host: address.host, port: address.port),
                mode: upstream == nil ? .forward : .reverse,
                upstream: upstream
            )
        ]
    }

    /// SIGUSR1 (and SIGHUP): a file access log is opened again at its path, as nginx does on
    /// SIGUSR1, for `logrotate`; a failure is reported and the old file kept.
    private static func reopen(_ accessLog: AccessLog) async {
        if let failure = await accessLog.reopen() {
            standardError("tollgate: \(failure.description); the access log goes on in the file it had")
        }
    }

    /// SIGHUP: the file is read again; problems are reported and the rules in force stay.
    private func reload(_ runtime: PolicyRuntime) {
        guard config != nil else {
            standardError("tollgate: SIGHUP: running on the embedded default, there is no file to reload")
            return
        }
        let problems = runtime.reload()
        if problems.isEmpty {
            standardError("tollgate: configuration reloaded")
            if let waiting = runtime.awaitingRestartNotice { standardError("tollgate: \(waiting)") }
        } else {
            standardError("tollgate: configuration not reloaded; the rules in force stay:")
            for problem in problems { standardError(problem.description) }
        }
    }
}
