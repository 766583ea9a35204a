import ArgumentParser
import TollgateHTTP
import TollgatePolicy

/// `tollgate explain URL [--config FILE]`: what the policy decides for one URL.
///
/// Prints ``PolicyDecisions/explain(_:now:)``: the matching host rule, the session, and the
/// decisions for caching, trust, redirects, headers and credentials, one `item: value` per line.
/// Without `--config`, under the embedded default. Files the configuration points at are not
/// opened, so a file meant for another machine can be explained here.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show which host rule matches a URL and what the policy decides for it.",
        discussion: """
            Prints one `item: value` line each for the URL, the matching rule, the session, deny, \
            cache, cache-key, trust, client-identity, redirects, upstream-proxy, headers, credentials \
            and intercept. Passwords are never printed, only where they come from. Without --config, \
            under the embedded default. Exits 1 for a URL that is not an absolute http(s) URL or a \
            configuration file with problems (printed as check-config prints them).
            """
    )

    @Argument(help: ArgumentHelp("An absolute http or https URL.", valueName: "url"))
    var url: String

    @Option(help: ArgumentHelp("The configuration file (default: the embedded default).", valueName: "file"))
    var config: String?

    func run() throws {
        let target: HTTPURL
        do {
            target = try HTTPURL.parse(url)
        } catch {
            throw CommandFailure.user("\(url): \(error); give an absolute URL such as https://example.com/path")
        }
        guard target.scheme == "http" || target.scheme == "https" else {
            throw CommandFailure.user("\(url): only http and https URLs can be explained")
        }
        let configuration: PolicyConfiguration
        if let config {
            do throws(PolicyLoader.Failure) {
                configuration = try PolicyLoader(checkFiles: false).load(contentsOf: config)
            } catch {
                standardError(error.description)
                throw ExitCode(CommandFailure.userErrorCode)
            }
        } else {
            configuration = EmbeddedDefaultConfig.configuration()
        }
        standardOutput(PolicyDecisions(configuration: configuration).explain(target))
    }
}
