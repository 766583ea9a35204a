import ArgumentParser
import Foundation
import TollgatePolicy

/// `tollgate check-config FILE`: validates a policy file without running anything.
///
/// Prints `ok` and exits 0 when the file is valid; otherwise prints one line per problem,
/// `FILE:LINE: KEY: message`, in line order, on standard output and exits 1. A file that cannot
/// be read is a problem line too (`FILE:1: (file): cannot read the file: …`). Files the
/// configuration points at (password files, client identities, PEM bundles) must be readable.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file.",
        discussion: """
            Prints `ok` and exits 0 when FILE is valid. Otherwise prints one line per problem, \
            `FILE:LINE: KEY: what is wrong`, and exits 1. Every problem is reported, not only the \
            first; files the configuration points at (password files, client certificates and keys, \
            PEM root bundles) must exist and be readable.
            """
    )

    @Argument(help: ArgumentHelp("The configuration file.", valueName: "file"))
    var file: String

    func run() throws {
        let problems = PolicyLoader().problems(inFile: file)
        guard !problems.isEmpty else {
            standardOutput("ok")
            return
        }
        standardOutput(problems.map(\.description).joined(separator: "\n"))
        throw ExitCode(CommandFailure.userErrorCode)
    }
}

/// Writes lines to standard output at once (one write, unbuffered).
func standardOutput(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
