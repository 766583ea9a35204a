import Foundation
import Yams

/// The images a Compose file (`compose.yaml`, `docker-compose.yml`) runs and builds from
/// (`tollgate warm compose.yaml`): each service's `image` — unless it has a `build`, whose image is
/// the one built — and, for a service with a `build`, the images its Dockerfile builds from
/// (``DockerfileImages``). Variables are interpolated as `docker compose` does: `${VAR}`,
/// `${VAR:-default}`, `$VAR` from the warm's environment, then the `.env` file beside the
/// Compose file; `$$` is a `$`.
enum ComposeFileImages {
    /// The images of the Compose file `text` read from `path` (its directory is where `.env`,
    /// build contexts and their Dockerfiles are found), each once, services in name order;
    /// `problems` gets a line for each one that cannot be read. Nil when `text` is not a Compose
    /// file: a YAML mapping whose `services` is a mapping of services, at least one with an
    /// `image` or a `build`.
    static func images(
        in text: String, path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        problems: inout [String]
    ) -> [DockerfileImages.Use]? {
        guard text.contains("services:"), let services = services(in: text),
            services.values.contains(where: { ($0 as? [String: Any]).map { $0["image"] != nil || $0["build"] != nil } ?? false })
        else { return nil }
        let directory = (path as NSString).deletingLastPathComponent
        var variables = dotEnv(in: directory)
        variables.merge(environment) { _, process in process }
        var uses: [DockerfileImages.Use] = []
        func add(_ use: DockerfileImages.Use) {
            if !uses.contains(use) { uses.append(use) }
        }
        for (name, value) in services.sorted(by: { $0.key < $1.key }) {
            guard let service = value as? [String: Any] else { continue }
            let platform = (service["platform"] as? String).flatMap { DockerfileImages.substitute($0, variables) }.flatMap(ImagePlatform.init)
            if let build = service["build"] {
                // The service's image is the one built: what its Dockerfile builds from is pulled.
                guard let dockerfile = dockerfilePath(of: build, in: directory, variables) else {
                    problems.append("\(path): services.\(name).build: no build context to read a Dockerfile in; not warmed")
                    continue
                }
                guard let contents = try? String(contentsOfFile: dockerfile, encoding: .utf8) else {
                    problems.append("\(path): services.\(name).build: cannot read \(dockerfile); its images are not warmed")
                    continue
                }
                for use in DockerfileImages.images(in: contents, source: dockerfile, problems: &problems) { add(use) }
                continue
            }
            guard let written = service["image"] as? String else { continue }
            guard let image = DockerfileImages.substitute(written, variables), !image.isEmpty else {
                problems.append("\(path): services.\(name).image: '\(written)' uses a variable that is not set; not warmed")
                continue
            }
            do throws(ImageReference.ParseError) {
                add(DockerfileImages.Use(reference: try ImageReference(parsing: image), platform: platform))
            } catch {
                problems.append("\(path): services.\(name).image: \(error.description); not warmed")
            }
        }
        return uses
    }

    /// The `services` mapping of `text`, when it is YAML with one.
    private static func services(in text: String) -> [String: Any]? {
        ((try? Yams.load(yaml: text)) as? [String: Any])?["services"] as? [String: Any]
    }

    /// The Dockerfile a `build` reads: `build: CONTEXT`, or `{ context, dockerfile }` (context
    /// default `.`, dockerfile default `Dockerfile`, relative to the context). Nil for a context
    /// that is not a directory here (a Git URL).
    private static func dockerfilePath(of build: Any, in directory: String, _ variables: [String: String]) -> String? {
        var context = "."
        var dockerfile = "Dockerfile"
        if let text = build as? String {
            context = text
        } else if let mapping = build as? [String: Any] {
            context = mapping["context"] as? String ?? "."
            dockerfile = mapping["dockerfile"] as? String ?? "Dockerfile"
        } else {
            return nil
        }
        guard let contextPath = DockerfileImages.substitute(context, variables), let file = DockerfileImages.substitute(dockerfile, variables),
            !contextPath.contains("://"), !contextPath.hasPrefix("git@")
        else { return nil }
        let base = contextPath.hasPrefix("/") ? contextPath : (directory as NSString).appendingPathComponent(contextPath)
        return file.hasPrefix("/") ? file : (base as NSString).appendingPathComponent(file)
    }

    /// `NAME=VALUE` lines of `DIRECTORY/.env` (quotes removed; comments and blank lines skipped).
    private static func dotEnv(in directory: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: (directory as NSString).appendingPathComponent(".env"), encoding: .utf8) else {
            return [:]
        }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else { continue }
            var value = String(trimmed[trimmed.index(after: equals)...])
            if value.count >= 2, let first = value.first, first == value.last, first == "\"" || first == "'" {
                value = String(value.dropFirst().dropLast())
            }
            values[String(trimmed[..<equals]).trimmingCharacters(in: .whitespaces)] = value
        }
        return values
    }
}
