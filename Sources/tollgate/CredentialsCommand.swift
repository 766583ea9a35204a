import ArgumentParser
import Foundation
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// `tollgate credentials list|set|remove`: the permanent credential store
/// (`DATA-DIR/credentials`, LMDB, directory 0700 and files 0600). Passwords are never printed;
/// `set` never takes one as an argument (it would show in `ps`): from a variable, a file or stdin.
struct CredentialsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "List, set or remove the permanent credentials (passwords masked).",
        subcommands: [List.self, SetCredential.self, Remove.self]
    )

    struct Location: ParsableArguments {
        @OptionGroup var data: DataDirectoryOption

        var credentialsDirectory: String { CookieCredentialStores.credentialsDirectory(in: data.directory) }

        /// The store, created when missing only if `create`; nil when absent and not created.
        func open(create: Bool) throws -> CredentialStore? {
            guard create || FileManager.default.fileExists(atPath: credentialsDirectory + "/data.mdb") else {
                return nil
            }
            do {
                return try CredentialStore.open(directory: credentialsDirectory)
            } catch {
                throw CommandFailure.user("cannot open the credential store in \(credentialsDirectory): \(error)")
            }
        }
    }

    /// The protection space options shared by set and remove.
    struct Space: ParsableArguments {
        @Argument(help: ArgumentHelp("The server: http://HOST[:PORT] or https://HOST[:PORT].", valueName: "url"))
        var url: String
        @Option(help: "The realm (default: any realm of the server).")
        var realm: String?
        @Option(help: "The authentication method: basic or digest. A basic credential also answers digest.")
        var method: String = "basic"

        func server() throws -> HTTPURL {
            guard let parsed = HTTPURL(string: url) else {
                throw CommandFailure.user("\(url) is not an http:// or https:// URL")
            }
            return parsed
        }

        func authenticationMethod() throws -> ProtectionSpace.AuthenticationMethod {
            switch method.lowercased() {
            case "basic": return .httpBasic
            case "digest": return .httpDigest
            default: throw CommandFailure.user("--method: \(method) is not basic or digest")
            }
        }

        func space() throws -> ProtectionSpace {
            let server = try server()
            return ProtectionSpace(
                host: server.host,
                port: server.effectivePort,
                protocol: server.scheme,
                realm: realm,
                authenticationMethod: try authenticationMethod()
            )
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the stored credentials, one a line: SERVER METHOD REALM USER **** [default]."
        )
        @OptionGroup var location: Location

        func run() throws {
            guard let store = try location.open(create: false) else { return }
            defer { store.close() }
            for line in CredentialsCommand.listing(store) { print(line) }
        }
    }

    struct SetCredential: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Store a permanent credential for a server (and realm) and make it the default there.",
            discussion: """
                Give the password with exactly one of --password-env, --password-file (first line) or \
                --password-stdin (first line); never on the command line.
                """
        )
        @OptionGroup var location: Location
        @OptionGroup var space: Space
        @Option(help: "The user name.") var user: String
        @Option(help: ArgumentHelp("Read the password from this environment variable.", valueName: "name"))
        var passwordEnv: String?
        @Option(help: ArgumentHelp("Read the password from the first line of this file.", valueName: "path"))
        var passwordFile: String?
        @Flag(help: "Read the password from the first line of standard input.")
        var passwordStdin = false

        func run() throws {
            let protectionSpace = try space.space()
            let password = try readPassword()
            guard let store = try location.open(create: true) else { return }
            store.set(
                Credential(user: user, password: password, persistence: .permanent),
                for: protectionSpace,
                asDefault: true
            )
            store.close()
            print(
                "stored \(user) for \(CredentialsCommand.describe(protectionSpace)) in \(location.credentialsDirectory)"
            )
        }

        private func readPassword() throws -> String {
            let source: HostRule.Credential.PasswordSource
            switch (passwordEnv, passwordFile, passwordStdin) {
            case (let name?, nil, false):
                source = .environment(name)
            case (nil, let path?, false):
                source = .file(path)
            case (nil, nil, true):
                let line = readLine(strippingNewline: true) ?? ""
                guard !line.isEmpty else { throw CommandFailure.user("no password on standard input") }
                return line
            default:
                throw CommandFailure.user("give exactly one of --password-env, --password-file, --password-stdin")
            }
            guard let password = source.readPassword() else {
                throw CommandFailure.user("no password in \(source)")
            }
            return password
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Remove stored credentials for a server: every realm and user unless --realm or --user narrows it."
        )
        @OptionGroup var location: Location
        @OptionGroup var space: Space
        @Option(help: "Only this user's credential.") var user: String?

        func run() throws {
            let server = try space.server()
            let method = try space.authenticationMethod()
            guard let store = try location.open(create: false) else {
                throw CommandFailure.user("no credential matched (no store in \(location.credentialsDirectory))")
            }
            defer { store.close() }
            var removed = 0
            for (stored, credentials) in store.allCredentials {
                guard stored.protocol == server.scheme, stored.host == server.host, stored.port == server.effectivePort,
                    stored.authenticationMethod == method, space.realm == nil || stored.realm == space.realm
                else { continue }
                for name in credentials.keys where user == nil || name == user {
                    store.remove(user: name, for: stored)
                    removed += 1
                    print("removed \(name) for \(CredentialsCommand.describe(stored))")
                }
            }
            guard removed > 0 else { throw CommandFailure.user("no credential matched") }
        }
    }

    /// One line per credential, sorted: `SERVER  METHOD  REALM  USER  ****  [default]`.
    static func listing(_ store: CredentialStore) -> [String] {
        var lines: [String] = []
        for (space, credentials) in store.allCredentials {
            let defaultUser = store.defaultUser(for: space)
            for (user, credential) in credentials {
                var line = describe(space) + "  "
                if let identity = credential.clientIdentity {
                    line += "client-identity  \(identity.certificatePath)  \(identity.keyPath)"
                } else {
                    line += "\(user)  ****"
                }
                if user == defaultUser { line += "  default" }
                lines.append(line)
            }
        }
        return lines.sorted()
    }

    /// `https://host:port  basic  realm="R"` (`realm=*` for any realm).
    static func describe(_ space: ProtectionSpace) -> String {
        let realm = space.realm.map { "realm=\"\($0)\"" } ?? "realm=*"
        return
            "\(space.protocol)://\(space.host.contains(":") ? "[\(space.host)]" : space.host):\(space.port)  \(space.authenticationMethod)  \(realm)"
    }
}
