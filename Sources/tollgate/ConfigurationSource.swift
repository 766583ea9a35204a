import Foundation
import TollgatePolicy

/// Loads the configuration a command works on: `--config FILE`, or the embedded default.
enum ConfigurationSource {
    static func load(_ file: String?) throws -> PolicyConfiguration {
        guard let file else { return EmbeddedDefaultConfig.configuration() }
        do {
            return try PolicyLoader().load(contentsOf: file)
        } catch {
            throw CommandFailure.user(error.problems.map(\.description).joined(separator: "\n"))
        }
    }
}
