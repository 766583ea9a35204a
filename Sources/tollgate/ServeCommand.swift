import ArgumentParser
import Foundation
import TollgateProxy

/// `tollgate serve [--config FILE] [--listen HOST:PORT]`: runs the proxy.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the proxy.",
        discussion: """
            Without --config, runs the embedded default's forward listener on 127.0.0.1:3128: plain-HTTP \
            requests in absolute form (GET http://host/path) are forwarded, each by a session task; https:// \
            targets and CONNECT are answered 501 (not supported yet). Prints `listening on ADDRESS (forward)` \
            once it accepts connections and writes an access log (combined format) to standard error. \
            SIGTERM or SIGINT: stops accepting, lets requests in flight finish (at most 10 s), exits 0.
            """
    )

    @Option(
        help: ArgumentHelp(
            "A configuration file. Not supported yet by this build: giving it exits with status 1.",
            valueName: "file"
        )
    )
    var config: String?

    @Option(
        help: ArgumentHelp(
            "Listen on HOST:PORT instead of 127.0.0.1:3128 ([::1]:PORT for IPv6; port 0: any free port).",
            valueName: "host:port"
        )
    )
    var listen: String?

    /// How long in-flight exchanges may take to finish after SIGTERM/SIGINT.
    static let gracePeriod: Duration = .seconds(10)

    func run() async throws {
        if config != nil {
            throw CommandFailure.user("--config is not supported yet by this build")
        }
        var address = ListenAddress.defaultForward
        if let listen {
            do {
                address = try ListenAddress.parse(listen)
            } catch {
                throw CommandFailure.user("--listen: \(error)")
            }
        }
        // Watch the signals before binding, so a signal right after the "listening" line is never lost.
        let signals = SignalWaiter([SIGTERM, SIGINT])
        signal(SIGPIPE, SIG_IGN)
        let server: ProxyServer
        do {
            server = try await ProxyServer.start(ProxyServer.Configuration(listen: address, mode: .forward))
        } catch let error as ProxyServerError {
            throw CommandFailure.user(error.description)
        }
        // One unbuffered write: the line is out at once, even when stdout is a pipe.
        let line = "listening on \(server.boundAddress) (\(server.configuration.mode))\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        _ = await signals.next()
        await server.shutdown(gracePeriod: Self.gracePeriod)
    }
}
