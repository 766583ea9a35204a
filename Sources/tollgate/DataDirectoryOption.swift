import ArgumentParser
import Foundation
import TollgatePolicy

/// `--data-dir DIR`: where the credential and cookie stores live, shared by `credentials` and
/// `cookies`.
struct DataDirectoryOption: ParsableArguments {
    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "The data directory holding credentials/ and cookies/ (default: $XDG_DATA_HOME/tollgate, else ~/.local/share/tollgate).",
            valueName: "dir"
        )
    )
    var dataDirectory: String?

    /// The directory, `~` expanded.
    var directory: String {
        ((dataDirectory ?? CookieCredentialStores.defaultDirectory()) as NSString).expandingTildeInPath
    }
}
