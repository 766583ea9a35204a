import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// The shipped configurations (conf/*.yaml) and the embedded default pass validation.
@Suite(.timeLimit(.minutes(1)))
struct ConfFilesTests {
    /// Every shipped file, with the files it references (relative to the file's directory, or to
    /// the home directory for `~/…`). The test writes them into a temporary copy, so that the
    /// check of referenced files runs too, without secrets or certificates in the repository.
    static let files: [(name: String, referenced: [String])] = [
        ("default.yaml", []),
        ("dev.yaml", []),  // its mkcert root is optional: fine on a machine without mkcert
        // Their operators' certificates and secrets are optional or commented out as shipped, so
        // that every example passes check-config on a machine that has none of them.
        ("ci-warmer.yaml", []),
        ("pinning-gateway.yaml", []),
    ]

    static func path(_ name: String) -> String { Fixture.repositoryRoot + "/conf/" + name }

    @Test(arguments: ConfFilesTests.files.map(\.name))
    func aShippedFileIsValidWithoutItsReferencedFiles(name: String) {
        #expect(PolicyLoader(checkFiles: false).problems(inFile: Self.path(name)).map(\.description) == [])
    }

    @Test(arguments: 0..<ConfFilesTests.files.count)
    func aShippedFileIsValidWithItsReferencedFilesInPlace(index: Int) throws {
        let (name, referenced) = Self.files[index]
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let home = directory + "/home"
        let copy = directory + "/etc/" + name
        try FileManager.default.createDirectory(atPath: directory + "/etc", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.path(name), toPath: copy)
        let loader = PolicyLoader(checkFiles: true, homeDirectory: home)
        let missing = loader.problems(inFile: copy)
        #expect(missing.count == referenced.count, "each referenced file is checked: \(missing)")
        for file in referenced {
            let target = file.hasPrefix("~/") ? home + file.dropFirst(1) : directory + "/etc/" + file
            try FileManager.default.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true
            )
            #expect(FileManager.default.createFile(atPath: target, contents: Data("placeholder\n".utf8)))
        }
        #expect(loader.problems(inFile: copy).map(\.description) == [])
    }

    @Test func theEmbeddedDefaultIsWhatTheContractSays() throws {
        let configuration = EmbeddedDefaultConfig.configuration()
        #expect(
            configuration.listeners == [
                PolicyConfiguration.Listener(address: .init(host: "127.0.0.1", port: 3128), mode: .forward)
            ]
        )
        #expect(configuration.admin?.address == PolicyConfiguration.Address(host: "127.0.0.1", port: 9090))
        #expect(configuration.cache.path == nil)
        #expect(configuration.cache.maxSize == 1 << 30)
        #expect(configuration.cache.kind == .shared)
        #expect(configuration.access.clients == [CIDR.loopbackIPv4, CIDR.loopbackIPv6])
        #expect(configuration.access.connectPorts == [443])
        #expect(configuration.access.destinations.isEmpty)
        #expect(configuration.access.users.isEmpty)
        #expect(configuration.sessionNames == ["default"])
        let decision = PolicyDecisions(configuration: configuration).decide(host: "any.example", port: 443)
        #expect(decision.rule?.index == 0)
        #expect(decision.trust.roots == .system)
        #expect(decision.trust.pins.isEmpty)
        #expect(!decision.trust.insecure && !decision.deny && !decision.intercept)
    }

    @Test func theEmbeddedDefaultMeansWhatConfDefaultYAMLMeans() throws {
        let file = try PolicyLoader(checkFiles: true).load(contentsOf: Self.path("default.yaml"))
        var embedded = EmbeddedDefaultConfig.configuration()
        var fromFile = file
        for index in embedded.hosts.indices { embedded.hosts[index].sourceLine = nil }
        for index in fromFile.hosts.indices { fromFile.hosts[index].sourceLine = nil }
        #expect(embedded == fromFile)
    }

    @Test func theDefaultCachePathFollowsXDG() {
        typealias Cache = PolicyConfiguration.Cache
        #expect(
            Cache.defaultPath(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"]) == "/x/cache/tollgate"
        )
        #expect(
            Cache.defaultPath(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"])
                == "/home/u/.cache/tollgate"
        )
        #expect(Cache.defaultPath(environment: ["HOME": "/home/u/"]) == "/home/u/.cache/tollgate")
        var cache = Cache()
        cache.path = "/var/cache/tollgate"
        #expect(cache.resolvedPath(environment: ["HOME": "/home/u"]) == "/var/cache/tollgate")
        let interception = PolicyConfiguration.Interception()
        #expect(interception.resolvedCADirectory(environment: ["HOME": "/h"]) == "/h/.local/share/tollgate/ca")
    }

    @Test func theGatewayExampleDecidesWhatItsCommentsSay() throws {
        let configuration = try PolicyLoader(checkFiles: false).load(contentsOf: Self.path("pinning-gateway.yaml"))
        let decisions = PolicyDecisions(configuration: configuration)
        let payments = decisions.decide(for: try #require(HTTPURL(string: "https://api.payments.example/v1/charge")))
        #expect(payments.trust.pins.count == 2)
        #expect(payments.trust.pinMode == .enforce)
        #expect(payments.clientIdentity == nil, "commented out as shipped")
        #expect(payments.cacheStore == .doNotStore)
        #expect(decisions.decide(host: "legacy.partner.example", port: 443).deny)
        let partner = decisions.decide(host: "api.partner.example", port: 443)
        #expect(partner.trust.roots.includesSystem == false)
        #expect(partner.trust.roots.optionalBundles == [Fixture.repositoryRoot + "/conf/certs/partner-ca.pem"])
        #expect(partner.trust.pinMode == .report)
        #expect(partner.credentials.first?.user == "gateway")
        #expect(configuration.listeners.map(\.mode) == [.forward, .reverse])
        #expect(configuration.listeners[1].upstream?.host == "api.payments.example")
        #expect(!configuration.access.allowsDestination(host: "evil.example", address: [192, 0, 2, 1], port: 443))
        #expect(configuration.access.allowsDestination(host: "x.partner.example", address: [192, 0, 2, 1], port: 443))
    }

    @Test func theCIExampleUsesItsSessions() throws {
        let configuration = try PolicyLoader(checkFiles: false).load(contentsOf: Self.path("ci-warmer.yaml"))
        #expect(configuration.sessionNames == ["default", "warm"])
        let warm = try #require(configuration.sessionConfigurations()["warm"])
        #expect(warm.kind.backgroundIdentifier == "warm")
        #expect(warm.requestCachePolicy == .reloadRevalidating)
        #expect(configuration.log.access == .file("/var/log/tollgate/access.log"))
        #expect(configuration.log.format == .json)
        #expect(configuration.cache.rangeOffsetLimit == nil)
        #expect(configuration.access.users.isEmpty, "commented out as shipped")
    }

    @Test("The blocks the examples ship commented out work once uncommented")
    func commentedBlocksWorkUncommented() throws {
        func uncommented(_ name: String, _ keys: [String]) throws -> PolicyConfiguration {
            var lines = try String(contentsOfFile: Self.path(name), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (index, line) in lines.enumerated() {
                let trimmed = line.drop { $0 == " " }
                guard trimmed.hasPrefix("# "), keys.contains(where: { trimmed.dropFirst(2).drop { $0 == " " || $0 == "-" }.hasPrefix($0 + ":") }) else { continue }
                let indent = line.prefix { $0 == " " }
                lines[index] = String(indent + trimmed.dropFirst(2))
            }
            return try PolicyLoader(checkFiles: false).load(
                yaml: lines.joined(separator: "\n"), file: name, baseDirectory: Fixture.repositoryRoot + "/conf"
            )
        }
        let gateway = try uncommented("pinning-gateway.yaml", ["client-identity", "certificate", "key"])
        let payments = PolicyDecisions(configuration: gateway).decide(for: try #require(HTTPURL(string: "https://api.payments.example/")))
        #expect(payments.clientIdentity?.certificate == Fixture.repositoryRoot + "/conf/certs/gateway.pem")
        let ci = try uncommented("ci-warmer.yaml", ["users", "name", "password-file"])
        #expect(ci.access.users.first?.name == "ci")
        #expect(ci.access.users.first?.passwordFile == Fixture.repositoryRoot + "/conf/secrets/ci.pass")
    }

    @Test func mergeKeysAndExtensionFieldsShareSettings() throws {
        let yaml = """
            x-session-defaults: &defaults
              redirects: follow
              timeout-request: 30s
            sessions:
              ci:
                <<: *defaults
                timeout-request: 5s
            """
        let ci = try #require(try Fixture.load(yaml).session(named: "ci"))
        #expect(ci.redirects == .follow)
        #expect(ci.timeoutRequest == .seconds(5))
    }
}
