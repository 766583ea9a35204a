public import Foundation

/// Tollgate's data directory, where the stores that are not the cache live (credentials,
/// cookies, background sessions' tasks): `$XDG_DATA_HOME/tollgate` when that is an absolute
/// path, else `$HOME/.local/share/tollgate`.
public enum DataDirectory {
    /// The data directory for `environment`.
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/tollgate" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/tollgate"
    }
}
