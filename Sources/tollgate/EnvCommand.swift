import ArgumentParser
import Foundation
import TollgatePolicy
import TollgateTLS

/// `tollgate env [--config FILE] [--shell sh|fish] [--unset]`: the environment that points a
/// developer's tools at the proxy, to be `eval`ed by the shell:
///
/// - `http_proxy`, `https_proxy` (and their upper-case forms) naming the configuration's first
///   forward listener, `no_proxy` for loopback;
/// - with an interception CA: the CA added to what each tool trusts — `SSL_CERT_FILE` (OpenSSL:
///   curl, wget, Python's ssl, Ruby, Go), `REQUESTS_CA_BUNDLE` (Python requests), `CURL_CA_BUNDLE`,
///   `PIP_CERT`, `GIT_SSL_CAINFO`, `CARGO_HTTP_CAINFO`, `AWS_CA_BUNDLE` point to `bundle.pem`, the
///   system roots followed by the CA, written into the CA directory; `NODE_EXTRA_CA_CERTS` (which
///   adds to Node's own roots) to `ca.pem`.
///
/// The proxy's password, when it asks for one, is never printed: a comment says so.
struct EnvCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env",
        abstract: "Print shell lines that point tools at the proxy (and its CA): eval \"$(tollgate env)\"."
    )

    enum Shell: String, ExpressibleByArgument, CaseIterable {
        case sh, fish
    }

    @Option(name: .long, help: "The configuration file (default: the embedded one).")
    var config: String?
    @Option(name: .long, help: "The shell to print for: sh (bash, zsh, dash) or fish.")
    var shell: Shell = .sh
    @Option(name: .long, help: "The interception CA directory (default: interception.ca-dir, else ~/.local/share/tollgate/ca).")
    var caDir: String?
    @Flag(name: .long, help: "Print the lines that remove what env sets.")
    var unset = false

    /// Every variable env may set, in the order printed.
    static let proxyVariables = ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"]
    static let bundleVariables = [
        "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE",
    ]
    static let extraCAVariables = ["NODE_EXTRA_CA_CERTS"]

    func run() throws {
        if unset {
            for name in Self.proxyVariables + Self.bundleVariables + Self.extraCAVariables {
                print(shell == .fish ? "set -e \(name)" : "unset \(name)")
            }
            return
        }
        let configuration = try ConfigurationSource.load(config)
        guard let listener = configuration.listeners.first(where: { $0.mode == .forward }) else {
            throw CommandFailure.user("the configuration has no forward listener to point tools at (listen[].mode: forward)")
        }
        guard listener.address.port != 0 else {
            throw CommandFailure.user(
                "the forward listener \(listener.address) takes any free port when it starts: give it a port (listen[].address)"
            )
        }
        let scheme = listener.tls == nil ? "http" : "https"
        let proxy = "\(scheme)://\(Self.hostForURL(listener.address))"
        var lines: [(String, String)] = []
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] { lines.append((name, proxy)) }
        let loopback = "localhost,127.0.0.1,::1"
        lines.append(("no_proxy", loopback))
        lines.append(("NO_PROXY", loopback))
        var comments: [String] = []
        if !configuration.access.users.isEmpty {
            comments.append("# the proxy asks for a user and password (access.users): add them to the proxy URL yourself, as http://USER:PASSWORD@HOST:PORT")
        }
        let directory = caDir
            ?? configuration.interception.caDirectory
            ?? PolicyConfiguration.Interception.defaultCADirectory(environment: ProcessInfo.processInfo.environment)
        let caFile = directory + "/ca.pem"
        if let pem = try? String(contentsOfFile: caFile, encoding: .utf8), let authority = try? Certificate(pem: pem) {
            let bundle = directory + "/bundle.pem"
            if Self.writeBundle(authority, to: bundle) {
                for name in Self.bundleVariables { lines.append((name, bundle)) }
            } else {
                // A CA directory this user may not write (a read-only mount): the proxy lines and
                // Node's extra CA still help; the eval must not come up empty.
                comments.append("# cannot write the bundle \(bundle): the tools that take one bundle are left as they are")
            }
            for name in Self.extraCAVariables { lines.append((name, caFile)) }
        } else {
            comments.append("# no interception CA in \(directory) (tollgate ca init): https goes through tunnels, not the cache")
        }
        for comment in comments { print(comment) }
        for (name, value) in lines {
            print(shell == .fish ? "set -gx \(name) \(Self.quoted(value))" : "export \(name)=\(Self.quoted(value))")
        }
    }

    /// `HOST:PORT`, an IPv6 address in brackets; a wildcard address as the loopback one.
    static func hostForURL(_ address: PolicyConfiguration.Address) -> String {
        let host = address.host == "0.0.0.0" ? "127.0.0.1" : address.host == "::" ? "::1" : address.host
        return host.contains(":") ? "[\(host)]:\(address.port)" : "\(host):\(address.port)"
    }

    /// Single-quoted for sh and fish (a quote inside closes, escapes and reopens).
    static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The system's roots, then the CA: tools that take one bundle file (it replaces their roots)
    /// still reach every site, and sites the proxy intercepts verify against the CA. Written anew
    /// each time (the system's roots change with updates), readable by all (no secret in it).
    /// False when it cannot be written.
    static func writeBundle(_ authority: Certificate, to path: String) -> Bool {
        let system = TrustRoots.systemBundleFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
        var text = system
        if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
        text += "# Tollgate interception CA: \(authority.subject)\n" + authority.pemString
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            return true
        } catch {
            return false
        }
    }
}
