import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// `tollgate warm [--config FILE] [--session NAME] [--concurrency N] [--manifest FILE] [--resume-attempts N]
/// [--background-id ID] [--progress auto|always|never] [--json FILE] [--python-version X.Y] [--python-platform TAG]
/// FILE|-`: fetches every URL listed
/// into the cache, so that a build can later run offline against it.
struct WarmCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "warm",
        abstract: "Fetch every URL listed (one a line) into the cache.",
        discussion: """
            Reads absolute http(s) URLs, one a line, from FILE (- for standard input); blank lines and \
            lines starting with # are skipped. FILE may be a lockfile instead — npm's package-lock.json or \
            npm-shrinkwrap.json (versions 1 to 3), Yarn's classic yarn.lock, pnpm-lock.yaml, Cargo.lock (with the crates.io index \
            files cargo reads), uv.lock, pip's requirements.txt with --hash, poetry.lock, pipenv's Pipfile.lock (with the index pages \
            pip and poetry read, which give the files' URLs), go.sum (from GOPROXY's module proxy), Gemfile.lock (with \
            the compact index bundler reads), composer.lock: the artifacts it pins are \
            warmed, and each stored body is checked against the lockfile's digest (integrity, checksum, hash, h1:): one that \
            differs is removed from the cache and counts as failed. Of a Python lockfile's files, --python-version \
            and --python-platform keep those an installer on that target takes (each release's fitting wheels, else its \
            sdist). FILE may be a Dockerfile or a Compose file: the images it builds from (FROM, COPY --from; ARG \
            defaults substituted) or its services run (image, or a build's Dockerfile) are warmed as a client pulls them — the registry's version check (with a pull token \
            when it asks for one, never stored), the manifest by tag and by digest, the manifest for --platform \
            (default linux on this machine's architecture), the config and the layers — each checked against its \
            digest. A redirect the session passes on is warmed hop by hop, each hop as a client following \
            it asks for it. Each URL is fetched with GET under the configuration's rules \
            (--config, else the embedded default): its host rule's session, credentials, trust and \
            willCacheResponse answer, into the cache of cache.path. Prints one line per URL, \
            `STATUS  CACHE-STATUS  URL` (or `failed  URL: why`), then a summary. A transfer that is cut \
            (connection lost, timeout) goes on from where it was with its resume data, up to \
            --resume-attempts times; the summary counts the URLs resumed. The tasks run on background \
            sessions (identifier from --background-id, else derived from the configuration file and --session), \
            recorded under the data directory: a warm that was killed (SIGKILL, a lost CI runner) and run again \
            goes on where it stopped — finished URLs are fresh hits, the transfer it was in continues from its \
            offset. On a terminal a live display shows progress on standard error (--progress); --json FILE \
            writes a report per URL. Exit 0 when every URL is \
            in the cache afterwards; 1 when a line is not a URL, a URL failed, or a response was not stored. \
            --manifest FILE writes (merging into FILE when it exists) the lockfile of what the cache holds \
            for each URL in the cache afterwards: key, Vary'd request fields, status, size, SHA-256, \
            for tollgate serve --offline --manifest and tollgate cache verify --manifest.
            """
    )

    @Option(help: ArgumentHelp("The configuration file (YAML).", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("Fetch every URL on this named session instead of its rule's.", valueName: "name"))
    var session: String?

    @Option(help: "How many URLs are fetched at once (1 to 64).")
    var concurrency = 4

    @Option(
        help: ArgumentHelp(
            "Write the manifest (JSON lockfile) of what the cache holds for the URLs, merged into FILE.",
            valueName: "file"
        )
    )
    var manifest: String?

    @Option(help: "How many times a transfer that is cut is resumed from where it was (0 to 20).")
    var resumeAttempts = 3

    @Option(
        help: ArgumentHelp(
            "The background session identifier (default: derived from the configuration file and --session).", valueName: "id"
        )
    )
    var backgroundID: String?

    @Option(help: ArgumentHelp("The live display on standard error: auto (on a terminal), always or never.", valueName: "when"))
    var progress: WarmProgressDisplay.Mode = .auto

    @Option(help: ArgumentHelp("Write a JSON report (per URL: outcome, status, cache status, bytes, duration, resumed-from, error).", valueName: "file"))
    var json: String?

    @Option(
        help: ArgumentHelp(
            "Of a Python lockfile's files, warm only those CPython X.Y installs (repeatable, or a comma list).", valueName: "X.Y"
        )
    )
    var pythonVersion: [String] = []

    @Option(
        help: ArgumentHelp(
            "Of a Python lockfile's files, warm only those this platform installs: a tag such as manylinux_2_36_x86_64, "
                + "musllinux_1_2_aarch64, macosx_14_0_arm64, win_amd64, or local (repeatable, or a comma list).",
            valueName: "tag"
        )
    )
    var pythonPlatform: [String] = []

    @Option(
        help: ArgumentHelp(
            "Of the images of a Dockerfile or Compose file, warm the manifest for this platform (default: linux and this machine's architecture).",
            valueName: "os/arch[/variant]"
        )
    )
    var platform: String?

    @Argument(help: ArgumentHelp("The list of URLs, or - for standard input.", valueName: "file"))
    var file: String

    func validate() throws {
        guard (1...64).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 64") }
        guard (0...20).contains(resumeAttempts) else { throw ValidationError("--resume-attempts must be 0 to 20") }
        if let backgroundID, backgroundID.isEmpty || backgroundID.utf8.count > 200 {
            throw ValidationError("--background-id must be 1 to 200 bytes")
        }
        do {
            _ = try PythonTarget.parse(versions: pythonVersion, platforms: pythonPlatform)
        } catch {
            throw ValidationError(error.message)
        }
        if let platform, ImagePlatform(platform) == nil {
            throw ValidationError("--platform must be OS/ARCH or OS/ARCH/VARIANT (linux/amd64, linux/arm64, linux/arm/v7)")
        }
    }

    /// The platform whose manifest a Dockerfile's images are warmed for (`--platform`).
    var imagePlatform: ImagePlatform { platform.flatMap(ImagePlatform.init) ?? .host }

    /// The machines a Python lockfile's files are for (`--python-version`, `--python-platform`).
    var pythonTarget: PythonTarget? { try? PythonTarget.parse(versions: pythonVersion, platforms: pythonPlatform) }

    func run() async throws {
        let configuration = try ConfigurationSource.load(config)
        DiagnosticLog.bootstrap(level: configuration.log.level)
        let list = try readList()
        for problem in list.problems { standardError(problem) }
        var integrity = list.integrity
        var urls = list.urls
        var problems = list.problems
        if configuration.cache.readOnly {
            throw CommandFailure.user("warm fills the cache, and cache.read-only is set in \(config ?? "the configuration")")
        }
        let stores = try SessionStores(configuration: configuration)
        let cookieCredentialStores = ServeCommand.openCookieCredentialStores()
        let tracker = WarmTracker()
        let identifier = backgroundIdentifier()
        let prepareStores = cookieCredentialStores.preparation(then: stores.prepareSession)
        let runtime = PolicyRuntime(
            configuration: configuration,
            sourceFile: config,
            taskObserver: tracker,
            prepareSession: { name, settings, sessionConfiguration in
                prepareStores(name, settings, &sessionConfiguration)
                // Every session that keeps a cache runs in the background: its tasks outlive this run.
                if !sessionConfiguration.kind.isEphemeral { sessionConfiguration.kind = .background(identifier + "." + name) }
            }
        )
        let sessions = Array(runtime.sessions.values)
        defer {
            // Every task has ended: the stores are written out and the identifiers released.
            for session in sessions { session.detachBackgroundTasksAndWait() }
            runtime.shutdown()
            stores.close()
            cookieCredentialStores.flush()
        }
        if let refused = sessions.compactMap(\.backgroundError).first {
            throw CommandFailure.user(
                "\(refused.detail) — another tollgate warm with this list and configuration is running; wait for it, or give this one --background-id"
            )
        }
        if let session {
            guard let chosen = runtime.sessions[session] else {
                let known = runtime.sessions.keys.sorted().joined(separator: ", ")
                throw CommandFailure.user("--session: no session named \(session) (the configuration has: \(known))")
            }
            guard !chosen.configuration.kind.isEphemeral else {
                throw CommandFailure.user("--session: \(session) is ephemeral and keeps no cache")
            }
        }
        let pickedUp = PickedUpTasks(sessions: sessions)
        var warmer = URLWarmer(runtime: runtime, sessionName: session, tracker: tracker, pickedUp: pickedUp)
        warmer.resumeAttempts = resumeAttempts
        let finished = NIOLockedValueBox(0)
        // How many URLs in all: a lockfile's files are known once its index pages are read.
        let total = NIOLockedValueBox(list.urls.count + Set(list.lookups.flatMap(\.pages).map(\.absoluteString)).count + list.images.count)
        let display = progress.isOn(terminal: isatty(STDERR_FILENO) != 0)
            ? WarmProgressDisplay(tracker: tracker, urlCount: total.withLockedValue { $0 }, done: { finished.withLockedValue { $0 } })
            : nil
        display?.start()
        // SIGINT or SIGTERM: stop where it is, keeping every transfer for the next run.
        let signals = SignalWaiter([SIGINT, SIGTERM])
        Task.detached {
            guard let number = await signals.next() else { return }
            display?.stop()
            for session in sessions { session.detachBackgroundTasksAndWait() }
            stores.close()
            standardError(
                "tollgate warm: interrupted after \(finished.withLockedValue { $0 }) of \(total.withLockedValue { $0 }) URLs; "
                    + "run the same command again to go on where it stopped"
            )
            Foundation.exit(128 + number)
        }
        var outcomes: [URLWarmer.Outcome] = []
        var leftOut = list.leftOut
        if !list.images.isEmpty {
            // A Dockerfile's images: what is fetched is known as their manifests are read.
            let images = await warmImages(
                list.images, warmer: warmer, platform: imagePlatform, source: file == "-" ? "<stdin>" : file
            ) { finished.withLockedValue { $0 += 1 } }
            for problem in images.problems { standardError(problem) }
            problems += images.problems
            outcomes = images.outcomes
            urls = images.urls
            integrity.merge(images.integrity) { _, new in new }
            total.withLockedValue { $0 = urls.count }
            display?.setURLCount(urls.count)
        }
        if !list.lookups.isEmpty {
            // The index pages first: the files' URLs are in them.
            let pages = await warmIndexPages(
                list.lookups, warmer: warmer, store: stores.cache.store, source: file == "-" ? "<stdin>" : file, target: pythonTarget
            ) { finished.withLockedValue { $0 += 1 } }
            leftOut += pages.leftOut
            for problem in pages.problems { standardError(problem) }
            problems += pages.problems
            outcomes = pages.outcomes
            let known = Set(urls.map(\.absoluteString))
            for artifact in pages.artifacts where !known.contains(artifact.url.absoluteString) {
                urls.append(artifact.url)
                integrity[artifact.url.absoluteString] = artifact.integrity
            }
            urls = pages.urls + urls
            // The pages left out were fetched too: they count among those done.
            total.withLockedValue { $0 = urls.count + pages.dropped }
            display?.setURLCount(urls.count + pages.dropped)
        }
        if leftOut > 0, let target = pythonTarget {
            standardError("tollgate warm: \(leftOut) files the lockfile pins are not for \(target.description): not warmed")
        }
        let listed = Set(urls.map(\.absoluteString))
        let unclaimed = pickedUp.cancel { !listed.contains($0) }
        if unclaimed > 0 { standardError("tollgate warm: cancelled \(unclaimed) transfers of an earlier run whose URLs are not in this list") }
        outcomes += await warmer.warm(Array(urls[outcomes.count...]), concurrency: concurrency) { finished.withLockedValue { $0 += 1 } }
        await warmRedirectTargets(
            urls: &urls, outcomes: &outcomes, integrity: &integrity, warmer: warmer, concurrency: concurrency,
            adding: { count in display?.setURLCount(total.withLockedValue { $0 += count; return $0 }) },
            finished: { finished.withLockedValue { $0 += 1 } }
        )
        display?.stop()
        if !integrity.isEmpty { checkIntegrity(&outcomes, urls: urls, integrity: integrity, store: stores.cache.store) }
        for outcome in outcomes { print(outcome.line) }
        if let json {
            try WarmReport(urls: urls, outcomes: outcomes, skippedLines: problems.count).write(to: json)
        }
        if let manifest {
            try writeManifest(manifest, outcomes: outcomes, urls: urls, store: stores.cache.store)
        }
        let count = { (kind: URLWarmer.Outcome.Kind) in outcomes.filter { $0.kind == kind }.count }
        let warm = count(.fresh) + count(.stored)
        print(
            "warmed \(warm) of \(urls.count) URLs: \(count(.stored)) stored, \(count(.fresh)) already fresh, "
                + "\(count(.notStored)) not stored, \(count(.failed)) failed, \(outcomes.filter(\.resumed).count) resumed"
                + (problems.isEmpty ? "" : "; \(problems.count) lines skipped")
        )
        if warm < urls.count || !problems.isEmpty { throw ExitCode(CommandFailure.userErrorCode) }
    }

    /// The URLs of the list (or of an npm lockfile, with the integrity each must have, by URL)
    /// and a `FILE:LINE: …` line for each line that is not one.
    private func readList() throws -> (
        urls: [HTTPURL], problems: [String], integrity: [String: ArtifactDigest], lookups: [PythonPackageIndex.Lookup], leftOut: Int,
        images: [DockerfileImages.Use]
    ) {
        let text: String
        let name = file == "-" ? "<stdin>" : file
        if file == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw CommandFailure.user("cannot read \(file): \(error.localizedDescription)")
            }
        }
        var urls: [HTTPURL] = []
        var problems: [String] = []
        if let images = DockerfileImages.imagesIfDockerfile(in: text, source: name, problems: &problems) {
            if images.isEmpty, problems.isEmpty { problems.append("\(name): the Dockerfile builds from no image (only scratch or its own stages)") }
            return ([], problems, [:], [], 0, images)
        }
        if let images = ComposeFileImages.images(in: text, path: file == "-" ? "<stdin>" : file, problems: &problems) {
            if images.isEmpty, problems.isEmpty { problems.append("\(name): the Compose file names no image to pull") }
            return ([], problems, [:], [], 0, images)
        }
        if let format = PackageLockfile.format(of: text) {
            let lockfile = try PackageLockfile(text: text, format: format, source: name, problems: &problems)
            var artifacts = lockfile.artifacts
            if lockfile.isPython, let target = pythonTarget { artifacts = PackageLockfile.selecting(artifacts, for: target) }
            var integrity: [String: ArtifactDigest] = [:]
            for artifact in artifacts { integrity[artifact.url.absoluteString] = artifact.integrity }
            return (artifacts.map(\.url), problems, integrity, lockfile.lookups, lockfile.artifacts.count - artifacts.count, [])
        }
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            do throws(HTTPURL.ParseError) {
                let url = try HTTPURL.parse(line)
                guard url.scheme == "http" || url.scheme == "https" else {
                    problems.append("\(name):\(index + 1): only http:// and https:// URLs can be warmed, not '\(line)'")
                    continue
                }
                urls.append(url)
            } catch {
                problems.append("\(name):\(index + 1): not a URL: '\(line)' (\(error.description))")
            }
        }
        return (urls, problems, [:], [], 0, [])
    }
}
