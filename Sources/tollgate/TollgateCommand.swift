import ArgumentParser
import Foundation
import TollgateProxy

/// `tollgate`: the command line of the proxy (CONTRACT.md "Command line").
///
/// Exit codes: 0 ok, 1 user error (bad arguments, an address that cannot be bound), 2 internal
/// error. ArgumentParser's own usage-error code (64) is mapped to 1 here.
@main
struct TollgateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tollgate",
        abstract: "A caching HTTP proxy whose every request is carried out by a session task.",
        version: TollgateVersion.current,
        subcommands: [
            ServeCommand.self, CheckConfigCommand.self, ExplainCommand.self, CacheCommand.self, TrustCommand.self,
            CACommand.self, CredentialsCommand.self, CookiesCommand.self, WarmCommand.self, EnvCommand.self,
        ]
    )

    static func main() async {
        EventLoopSizing.applyAffinity()
        // First, on the main thread: malloc's arena limit holds only for arenas created after it,
        // and every thread that allocates before it gets one of its own.
        let environment = ProcessInfo.processInfo.environment
        let processors = EventLoopSizing.affinityCPUCount() ?? ProcessInfo.processInfo.activeProcessorCount
        let eventLoops = MallocTuning.eventLoopCount(environment: environment, processors: processors)
        MallocTuning.apply(environment: environment, eventLoops: eventLoops)
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }  // --help
            standardError(fullMessage(for: error))
            Foundation.exit(CommandFailure.userErrorCode)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            standardError("tollgate: \(failure.message)")
            Foundation.exit(failure.exitCode)
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            standardError("tollgate: internal error: \(error)")
            Foundation.exit(CommandFailure.internalErrorCode)
        }
    }
}

/// Writes one line to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
