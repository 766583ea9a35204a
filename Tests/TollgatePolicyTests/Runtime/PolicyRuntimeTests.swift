import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession

@Suite("PolicyRuntime: routing, reload, shutdown", .timeLimit(.minutes(1)))
struct PolicyRuntimeTests {
    typealias F = RuntimeFixture

    @Test func aRequestIsRoutedToTheSessionOfTheFirstMatchingRule() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }

        let api = runtime.route(try F.url("http://api.example.com/v1"))
        #expect(api.sessionName == "api")
        #expect(api.session === runtime.sessions["api"])
        #expect(api.ruleLabel == "hosts[0]:api.example.com")
        #expect(!api.isDenied)
        #expect(api.decision.cacheStore == .store(forceTTL: .seconds(600)))

        let web = runtime.route(try F.url("http://example.org/"))
        #expect(web.sessionName == "web")
        #expect(web.ruleLabel == "hosts[2]:**.example.com", "the label names the rule's first pattern")

        let blocked = runtime.route(try F.url("https://blocked.example.com/"))
        #expect(blocked.isDenied)
        #expect(blocked.ruleLabel == "hosts[1]:blocked.example.com")

        let unmatched = runtime.route(try F.url("http://elsewhere.test/"))
        #expect(unmatched.sessionName == "default")
        #expect(unmatched.session === runtime.sessions["default"])
        #expect(unmatched.ruleLabel == "-")
        #expect(runtime.route(host: "api.example.com", port: 443).sessionName == "api")
    }

    @Test func everyNamedSessionHasASessionWithAPolicyDelegateAndItsSettings() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        #expect(Set(runtime.sessions.keys) == ["default", "api", "web"])
        for (name, session) in runtime.sessions {
            let delegate = try #require(session.delegate as? PolicySessionDelegate)
            #expect(delegate.sessionName == name)
            #expect(session.sessionDescription == name)
        }
        let api = try #require(runtime.sessions["api"])
        #expect(api.configuration.httpMaximumConnectionsPerHost == 2)
        #expect(api.configuration.kind.isEphemeral)
    }

    @Test func theDefaultSessionExistsWithoutAnySessionsSection() throws {
        let runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil)
        defer { runtime.shutdown() }
        #expect(Array(runtime.sessions.keys) == ["default"])
        #expect(runtime.route(try F.url("http://a.test/")).sessionName == "default")
    }

    @Test func prepareSessionFinishesEveryConfigurationCreatedNowAndOnApply() throws {
        let names = Recorder<String>()
        let runtime = PolicyRuntime(
            configuration: try F.configuration(),
            sourceFile: nil,
            prepareSession: { name, settings, configuration in
                names.append(name)
                configuration.connectionIdleTimeout = .seconds(5)
                #expect(settings.redirects == (name == "api" ? .followSameHost : name == "web" ? .follow : .pass))
            }
        )
        defer { runtime.shutdown() }
        #expect(names.values.sorted() == ["api", "default", "web"])
        #expect(runtime.sessions["web"]?.configuration.connectionIdleTimeout == .seconds(5))

        var changed = runtime.configuration
        changed.sessions["web"]?.maxConnectionsPerHost = 3
        runtime.apply(changed)
        #expect(names.values.sorted() == ["api", "default", "web", "web"], "only the changed session is new")
    }

    @Test func applyKeepsUnchangedSessionsAndReplacesChangedAndRemovedOnes() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let before = runtime.sessions

        var next = runtime.configuration
        next.sessions["api"]?.maxConnectionsPerHost = 4  // changed
        next.sessions["web"] = nil  // removed…
        next.hosts.removeAll { $0.session == "web" }  // …with the rule that used it
        next.hosts.insert(HostRule(patterns: [try HostPattern("new.example.com")]), at: 0)
        runtime.apply(next)

        let after = runtime.sessions
        #expect(Set(after.keys) == ["default", "api"])
        #expect(after["default"] === before["default"], "unchanged: the same session, its pool survives")
        #expect(after["api"] !== before["api"], "changed: a new session of the same name")
        #expect(after["api"]?.configuration.httpMaximumConnectionsPerHost == 4)

        // The replaced sessions refuse new tasks (finishTasksAndInvalidate).
        for replaced in [before["api"], before["web"]] {
            let session = try #require(replaced)
            #expect(throws: SessionError.self) { try session.dataTask(with: F.request("http://example.org/")) }
        }
        // The kept one does not.
        let task = try #require(try after["default"]?.dataTask(with: F.request("http://x.test/")))
        task.cancel()

        #expect(runtime.route(try F.url("http://new.example.com/")).ruleLabel == "hosts[0]:new.example.com")
        #expect(runtime.route(try F.url("http://www.example.com/")).sessionName == "default", "web's rule is gone")
        #expect(runtime.configuration == next)
    }

    @Test func aKeptSessionsDelegateDecidesFromTheNewRules() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let delegate = try #require(runtime.sessions["default"]?.delegate as? PolicySessionDelegate)
        let proposedURL = try F.url("http://nocache.test/a")
        #expect(delegate.decisions.cacheStoreDecision(for: proposedURL) == .doNotStore)

        var next = runtime.configuration
        next.hosts.removeAll { $0.patterns.map(\.description) == ["nocache.test"] }
        runtime.apply(next)
        #expect(runtime.sessions["default"]?.delegate === delegate)
        #expect(delegate.decisions.cacheStoreDecision(for: proposedURL) == .store(forceTTL: nil))
    }

    @Test func aTaskInFlightKeepsItsSessionUntilItEndsThenTheRetiredSessionIsInvalidated() async throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let route = runtime.route(try F.url("http://www.example.com/"))
        let task = try route.session.dataTask(with: F.request("http://www.example.com/"))

        var next = runtime.configuration
        next.sessions["web"]?.redirects = .pass
        runtime.apply(next)

        #expect(runtime.route(try F.url("http://www.example.com/")).session !== route.session)
        #expect(task.session === route.session)
        #expect(route.session.allTasks.contains(task), "the old session still carries its task")
        #expect(runtime.retiringSessions.contains { $0 === route.session })
        #expect(route.session.delegate != nil, "not invalidated while a task runs")
        let oldDelegate = try #require(route.session.delegate as? PolicySessionDelegate)
        #expect(
            oldDelegate.decisions.decide(for: try F.url("http://www.example.com/")).redirects == .follow,
            "a retired session keeps the rules it had"
        )

        task.cancel()
        try await F.eventually("the retired session is invalidated") {
            route.session.delegate == nil && !runtime.retiringSessions.contains { $0 === route.session }
        }
    }

    @Test func reloadPutsTheEditedFileInForce() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/tollgate.yaml"
        try F.yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let loader = PolicyLoader(checkFiles: false)
        let runtime = PolicyRuntime(
            configuration: try loader.load(contentsOf: path),
            sourceFile: path,
            loader: loader,
            prepareSession: { _, _, _ in }
        )
        defer { runtime.shutdown() }
        let kept = runtime.sessions["api"]
        #expect(runtime.route(try F.url("http://nocache.test/")).decision.cacheStore == .doNotStore)

        try (F.yaml.replacingOccurrences(of: "cache: { store: deny }", with: "cache: { store: allow }"))
            .write(toFile: path, atomically: true, encoding: .utf8)
        #expect(runtime.reload().isEmpty)
        #expect(runtime.route(try F.url("http://nocache.test/")).decision.cacheStore == .store(forceTTL: nil))
        #expect(runtime.sessions["api"] === kept)
    }

    @Test func aReloadWithProblemsKeepsTheRulesInForceAndReturnsTheProblems() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/tollgate.yaml"
        try F.yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: path)
        defer { runtime.shutdown() }
        let before = runtime.sessions
        let configuration = runtime.configuration

        try (F.yaml.replacingOccurrences(of: "session: web", with: "session: wbe"))
            .write(toFile: path, atomically: true, encoding: .utf8)
        let problems = runtime.reload()
        #expect(
            problems.map(\.description) == [
                "\(path):18: hosts[2].session: unknown session \"wbe\"; did you mean \"web\"?"
            ]
        )
        #expect(runtime.configuration == configuration)
        #expect(runtime.sessions.mapValues(ObjectIdentifier.init) == before.mapValues(ObjectIdentifier.init))

        try FileManager.default.removeItem(atPath: path)
        let missing = runtime.reload()
        #expect(missing.count == 1)
        #expect(missing.first?.key == "(file)")
        #expect(runtime.route(try F.url("http://www.example.com/")).sessionName == "web")
    }

    @Test func reloadWithoutASourceFileChangesNothing() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let before = runtime.sessions["default"]
        #expect(runtime.reload().isEmpty)
        #expect(runtime.sessions["default"] === before)
    }

    @Test func shutdownInvalidatesEverySessionAndLaterAppliesChangeNothing() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        let sessions = runtime.sessions
        runtime.shutdown()
        for session in sessions.values {
            #expect(throws: SessionError.self) { try session.dataTask(with: F.request("http://a.test/")) }
        }
        var next = runtime.configuration
        next.sessions["api"]?.maxConnectionsPerHost = 1
        runtime.apply(next)
        #expect(runtime.sessions["api"] === sessions["api"])
        runtime.shutdown()  // twice is harmless
    }

    @Test func routingWhileApplyingFromOtherThreadsAlwaysGivesAConsistentRoute() async throws {
        let first = try F.configuration()
        let second = {
            var changed = first
            changed.sessions["web"]?.redirects = .pass
            changed.hosts.swapAt(0, 2)
            return changed
        }()
        let runtime = PolicyRuntime(configuration: first, sourceFile: nil)
        defer { runtime.shutdown() }
        let url = try F.url("http://api.example.com/")

        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<200 { runtime.apply(round.isMultiple(of: 2) ? second : first) }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<2000 {
                        let route = runtime.route(url)
                        // The session always belongs to the rule the route names.
                        let delegate = route.session.delegate as? PolicySessionDelegate
                        #expect(delegate == nil || delegate?.sessionName == route.sessionName)
                        #expect(["api", "web"].contains(route.sessionName))
                    }
                }
            }
        }
        try await F.eventually("every retired session, without tasks, is invalidated") {
            runtime.retiringSessions.isEmpty
        }
    }
}
