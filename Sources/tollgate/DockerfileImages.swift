import Foundation

/// The images a Dockerfile builds from (`tollgate warm Dockerfile`): each `FROM` that is not an
/// earlier stage or `scratch`, and each `COPY --from=IMAGE`, with the global `ARG` defaults
/// substituted as `docker build` substitutes them without `--build-arg`.
enum DockerfileImages {
    /// One image the file names, with the platform its `FROM --platform=` gives (nil: the warm's).
    struct Use: Equatable {
        var reference: ImageReference
        var platform: ImagePlatform?
    }

    /// The images of `text` when it reads as a Dockerfile — its first instruction (after blank
    /// lines, comments and parser directives) is `FROM` or `ARG`, and it has a `FROM` — else nil
    /// (what `warm` is given may be a lockfile or a list of URLs).
    static func imagesIfDockerfile(in text: String, source: String, problems: inout [String]) -> [Use]? {
        let instructions = self.instructions(in: text)
        guard let first = instructions.first?.keyword, first == "FROM" || first == "ARG",
            instructions.contains(where: { $0.keyword == "FROM" })
        else { return nil }
        return images(of: instructions, source: source, problems: &problems)
    }

    /// The images `text` names, each once, in order; `problems` gets `SOURCE:LINE: …` for each
    /// one that cannot be read (an `ARG` without a default, a malformed reference).
    static func images(in text: String, source: String, problems: inout [String]) -> [Use] {
        images(of: instructions(in: text), source: source, problems: &problems)
    }

    private static func images(of instructions: [Instruction], source: String, problems: inout [String]) -> [Use] {
        var arguments: [String: String] = [:]
        var stages: Set<String> = []
        var sawFrom = false
        var uses: [Use] = []
        var seen: Set<String> = []
        func add(_ written: String, platform: String?, line: Int) {
            guard let name = substitute(written, arguments) else {
                problems.append("\(source):\(line): '\(written)' uses a build argument with no default; not warmed")
                return
            }
            let lowered = name.lowercased()
            if lowered == "scratch" || stages.contains(lowered) || name.allSatisfy(\.isNumber) { return }
            do throws(ImageReference.ParseError) {
                let reference = try ImageReference(parsing: name)
                var chosen: ImagePlatform?
                if let platform {
                    guard let parsed = ImagePlatform(platform) else {
                        problems.append("\(source):\(line): --platform=\(platform) is not OS/ARCH[/VARIANT]; not warmed")
                        return
                    }
                    chosen = parsed
                }
                let use = Use(reference: reference, platform: chosen)
                if seen.insert("\(reference) \(chosen?.description ?? "")").inserted { uses.append(use) }
            } catch {
                problems.append("\(source):\(line): \(error.description); not warmed")
            }
        }
        for instruction in instructions {
            var words = instruction.arguments
            switch instruction.keyword {
            case "ARG" where !sawFrom:
                // `ARG NAME=default` before the first FROM: the FROM lines may use it.
                for word in words {
                    guard let equals = word.firstIndex(of: "=") else { continue }
                    arguments[String(word[..<equals])] = unquoted(String(word[word.index(after: equals)...]))
                }
            case "FROM":
                sawFrom = true
                var platform: String?
                while let flag = words.first, flag.hasPrefix("--") {
                    if flag.hasPrefix("--platform=") { platform = String(flag.dropFirst("--platform=".count)) }
                    words.removeFirst()
                }
                guard let image = words.first else { continue }
                // `--platform=$BUILDPLATFORM` and the like are the builder's own: the warm's platform.
                if let value = platform, value.contains("$") { platform = nil }
                add(image, platform: platform, line: instruction.line)
                if words.count >= 3, words[1].uppercased() == "AS" { stages.insert(words[2].lowercased()) }
            case "COPY":
                for word in words where word.hasPrefix("--from=") {
                    add(String(word.dropFirst("--from=".count)), platform: nil, line: instruction.line)
                }
            default:
                continue
            }
        }
        return uses
    }

    /// One instruction: its keyword (uppercased), its words and the line it starts on.
    private struct Instruction {
        var keyword: String
        var arguments: [String]
        var line: Int
    }

    /// The instructions of `text`: comment lines skipped, lines ending in `\` joined to the next.
    private static func instructions(in text: String) -> [Instruction] {
        var result: [Instruction] = []
        var pending = ""
        var start = 0
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") { continue }
            if pending.isEmpty {
                if line.isEmpty { continue }
                start = index + 1
            }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            pending += line
            let words = pending.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            pending = ""
            guard let keyword = words.first else { continue }
            result.append(Instruction(keyword: keyword.uppercased(), arguments: Array(words.dropFirst()), line: start))
        }
        return result
    }

    /// `text` with `$NAME`, `${NAME}` and `${NAME:-default}` replaced (`$$` is a `$`, as Compose
    /// writes one); nil when a name has no value.
    static func substitute(_ text: String, _ arguments: [String: String]) -> String? {
        guard text.contains("$") else { return text }
        var out = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            rest = rest[rest.index(after: dollar)...]
            if rest.first == "$" {
                out += "$"
                rest = rest.dropFirst()
                continue
            }
            var name: Substring
            var fallback: Substring?
            if rest.first == "{" {
                guard let close = rest.firstIndex(of: "}") else { return nil }
                var inner = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
                if let range = inner.range(of: ":-") ?? inner.range(of: "-") {
                    fallback = inner[range.upperBound...]
                    inner = inner[..<range.lowerBound]
                }
                name = inner
            } else {
                name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                rest = rest.dropFirst(name.count)
            }
            guard let value = arguments[String(name)].flatMap({ $0.isEmpty ? nil : $0 }) ?? fallback.map(String.init) else {
                return nil
            }
            out += value
        }
        return out + rest
    }

    private static func unquoted(_ text: String) -> String {
        if text.count >= 2, let first = text.first, first == text.last, first == "\"" || first == "'" {
            return String(text.dropFirst().dropLast())
        }
        return text
    }
}
