import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession

@Suite(
    "tollgate credentials and tollgate cookies",
    .enabled(if: CommandLineRunner.binary != nil, Comment(rawValue: CommandLineRunner.notFound)),
    .timeLimit(.minutes(1))
)
struct CredentialsCommandTests {
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    @Test("credentials set, list (masked), remove; the store under XDG_DATA_HOME with modes 0700/0600")
    func credentials() async throws {
        let home = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = ["XDG_DATA_HOME": home, "TG_TEST_PASSWORD": "pa55-from-env"]
        let set = try await CommandLineRunner.run(
            [
                "credentials", "set", "https://API.example.com", "--realm", "Restricted", "--user", "alice",
                "--password-env", "TG_TEST_PASSWORD",
            ],
            environment: environment
        )
        #expect(set.status == 0, "\(set)")
        let passwordFile = home + "/pw"
        try "pa55-from-file\nignored\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let second = try await CommandLineRunner.run(
            [
                "credentials", "set", "http://intranet:8080", "--method", "digest", "--user", "bob", "--password-file",
                passwordFile,
            ],
            environment: environment
        )
        #expect(second.status == 0, "\(second)")
        let directory = home + "/tollgate/credentials"
        #expect(Self.mode(directory) == 0o700)
        #expect(Self.mode(directory + "/data.mdb") == 0o600)
        #expect(Self.mode(directory + "/lock.mdb") == 0o600)

        let list = try await CommandLineRunner.run(["credentials", "list"], environment: environment)
        #expect(list.status == 0, "\(list)")
        #expect(
            list.stdout == """
                http://intranet:8080  digest  realm=*  bob  ****  default
                https://api.example.com:443  basic  realm="Restricted"  alice  ****  default

                """
        )
        for output in [set, second, list] {
            #expect(!output.stdout.contains("pa55") && !output.stderr.contains("pa55"))
        }
        // What the proxy will read: the store has the real password.
        let store = try CredentialStore.open(directory: directory)
        let space = ProtectionSpace(
            host: "api.example.com",
            port: 443,
            protocol: "https",
            realm: "Restricted",
            authenticationMethod: .httpBasic
        )
        #expect(store.defaultCredential(for: space)?.password == "pa55-from-env")
        store.close()

        let removed = try await CommandLineRunner.run(
            ["credentials", "remove", "https://api.example.com", "--user", "alice"],
            environment: environment
        )
        #expect(removed.status == 0, "\(removed)")
        let again = try await CommandLineRunner.run(
            ["credentials", "remove", "https://api.example.com"],
            environment: environment
        )
        #expect(again.status == 1)
        #expect(again.stderr.contains("no credential matched"))
        let after = try await CommandLineRunner.run(["credentials", "list", "--data-dir", home + "/tollgate"])
        #expect(after.stdout == "http://intranet:8080  digest  realm=*  bob  ****  default\n")
    }

    @Test("credentials set refuses a missing password source, two sources, a bad URL or method")
    func badArguments() async throws {
        let home = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = ["XDG_DATA_HOME": home]
        let cases: [[String]] = [
            ["credentials", "set", "https://a.example", "--user", "u"],
            ["credentials", "set", "https://a.example", "--user", "u", "--password-env", "A", "--password-stdin"],
            ["credentials", "set", "https://a.example", "--user", "u", "--password-env", "TG_SURELY_UNSET_VARIABLE"],
            ["credentials", "set", "ftp://a.example", "--user", "u", "--password-stdin"],
            ["credentials", "set", "https://a.example", "--user", "u", "--method", "ntlm", "--password-stdin"],
        ]
        for arguments in cases {
            let result = try await CommandLineRunner.run(arguments, environment: environment)
            #expect(result.status == 1, "\(arguments): \(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: home + "/tollgate/credentials/data.mdb"))
    }

    @Test("cookies list masks values (unless --show-values) and clear empties the jar, or one domain")
    func cookies() async throws {
        let home = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let directory = CookieCredentialStores.cookiesDirectory(in: home)
        do {
            let storage = try CookieStorage.persistent(directory: directory)
            storage.store(
                setCookieValues: [
                    "sid=tops3cret; Max-Age=3600; Secure; HttpOnly; SameSite=Strict",
                    "pref=dark; Domain=example.com; Max-Age=3600",
                ],
                from: HTTPURL(string: "https://www.example.com/")!,
                policy: .always
            )
            storage.store(
                setCookieValues: ["other=1; Max-Age=3600"],
                from: HTTPURL(string: "http://other.org/")!,
                policy: .always
            )
            storage.close()
        }
        let list = try await CommandLineRunner.run(["cookies", "list", "--data-dir", home])
        #expect(list.status == 0, "\(list)")
        let lines = list.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(
            lines.contains {
                $0.hasPrefix("www.example.com  /  sid=****  expires ")
                    && $0.hasSuffix("secure  httponly  samesite=Strict")
            }
        )
        #expect(lines.contains { $0.hasPrefix(".example.com  /  pref=****") })
        #expect(!list.stdout.contains("tops3cret"))
        let shown = try await CommandLineRunner.run([
            "cookies", "list", "--data-dir", home, "--show-values", "--domain", "www.example.com",
        ])
        #expect(shown.stdout.contains("sid=tops3cret"))
        #expect(!shown.stdout.contains("other"))
        let clearOne = try await CommandLineRunner.run(["cookies", "clear", "--data-dir", home, "--domain", "other.org"])
        #expect(clearOne.stdout == "removed 1 cookie\n")
        let clearAll = try await CommandLineRunner.run(["cookies", "clear", "--data-dir", home])
        #expect(clearAll.stdout == "removed 2 cookies\n")
        #expect(try await CommandLineRunner.run(["cookies", "list", "--data-dir", home]).stdout == "")
    }
}
