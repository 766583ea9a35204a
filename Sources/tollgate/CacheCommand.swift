import ArgumentParser
import Foundation
import TollgateCache
import TollgateHTTP
import TollgatePolicy

/// `tollgate cache stats|list|purge URL|--tag TAG|verify [--config FILE | --cache-dir DIR]`: offline tools
/// on the cache's LMDB environment (safe while the proxy runs: LMDB allows other processes).
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect and maintain the response cache.",
        subcommands: [Stats.self, List.self, Purge.self, Verify.self]
    )

    struct Location: ParsableArguments {
        @Option(name: .long, help: "The configuration file whose cache to use.")
        var config: String?

        @Option(name: .long, help: "The cache directory (overrides the configuration).")
        var cacheDir: String?

        /// The configuration the cache is found from (`--config`, else the embedded default).
        func configuration() throws -> PolicyConfiguration {
            try ConfigurationSource.load(config)
        }

        /// Opens the cache; `readOnly` for the commands that only read it (they write nothing,
        /// and work on a cache directory they may not write).
        func open(_ loaded: PolicyConfiguration? = nil, readOnly: Bool = false) throws -> CacheStore {
            let configuration = try loaded ?? self.configuration()
            let path = cacheDir ?? configuration.cache.resolvedPath(environment: ProcessInfo.processInfo.environment)
            guard FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure.user("no cache at \(path)")
            }
            do {
                return try CacheStore(
                    options: CacheStoreOptions(
                        path: path, maxSize: configuration.cache.maxSize,
                        rules: configuration.cache.kind == .shared ? .shared : .private,
                        readOnly: readOnly
                    )
                )
            } catch {
                throw CommandFailure.user("cannot open the cache at \(path): \(error)")
            }
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Entries, bytes, capacity, hits and misses.")
        @OptionGroup var location: Location

        func run() throws {
            let store = try location.open(readOnly: true)
            defer { store.close() }
            let stats = try store.statistics()
            print("path: \(store.options.path)")
            print("entries: \(stats.entries)")
            print("bytes: \(stats.bytes)")
            print("capacity: \(stats.capacity)")
            print("hits: \(stats.hits)")
            print("misses: \(stats.misses)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One line per stored response: status, size, stored at, URL.")
        @OptionGroup var location: Location
        @Option(help: "At most this many lines.") var limit: Int = .max

        func run() throws {
            let store = try location.open(readOnly: true)
            defer { store.close() }
            let formatter = ISO8601DateFormatter()
            for entry in try store.list(limit: limit) {
                print("\(entry.status)  \(entry.size)  \(formatter.string(from: entry.storedAt))  \(entry.url)")
            }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove every stored variant of URL (under the host rule's cache.key normalization), or every response with a tag.",
            discussion: """
                URL* (a trailing *, quoted from the shell) removes every URL that starts with URL. --tag TAG removes \
                every stored response whose cache.tag-header field names TAG (repeat it, or separate tags by \
                spaces or commas, for several).
                """
        )
        @OptionGroup var location: Location
        @Argument(help: "The URL whose responses to remove; URL* for every URL under a prefix.") var url: String?
        @Option(name: .long, help: "Remove the responses tagged TAG in cache.tag-header instead.") var tag: [String] = []
        @Flag(name: .long, help: "Mark them stale instead of removing them: each is revalidated before it is served fresh again.")
        var soft = false

        func validate() throws {
            guard (url == nil) != tag.isEmpty else { throw ValidationError("give a URL or --tag TAG, not both") }
        }

        func run() throws {
            let configuration = try location.configuration()
            let selection: CachePurgeSelection
            if !tag.isEmpty {
                guard let field = configuration.cache.tagHeader else {
                    throw CommandFailure.user("purging by tag needs cache.tag-header in the configuration (the response field holding the tags)")
                }
                selection = .tags(in: tag, field: field)
            } else if let url {
                // A rule's cache.key (dropped or sorted query parameters) decides the stored URL.
                let decisions = PolicyDecisions(configuration: configuration)
                guard let target = CachePurgeSelection.target(url, keyURL: decisions.cacheKeyURL(for:)) else {
                    throw CommandFailure.user("\(url): write an absolute http(s) URL with a path before the * (https://host/path*)")
                }
                selection = target
            } else {
                return
            }
            let store = try location.open(configuration)
            defer { store.close() }
            print(CachePurgeSelection.answer(try store.purge(selection, soft: soft), soft: soft), terminator: "")
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every body against its recorded length and SHA-256; exit 1 when one is bad.",
            discussion: """
                With --manifest FILE (from tollgate warm --manifest): check instead that every entry of the \
                manifest is in the cache with its status, size and SHA-256 (the bytes are read again); exit 0 \
                when all are, else 1 with one line per URL that is missing or differs.
                """
        )
        @OptionGroup var location: Location
        @Flag(help: "Remove the entries that fail.") var repair = false
        @Option(help: ArgumentHelp("Check the entries of this manifest.", valueName: "file")) var manifest: String?

        func validate() throws {
            if manifest != nil, repair { throw ValidationError("--repair checks every entry; it does not go with --manifest") }
        }

        func run() throws {
            let store = try location.open(readOnly: !repair)
            defer { store.close() }
            if let manifest {
                try verify(against: manifest, store: store)
                return
            }
            let report = try store.verify(repair: repair)
            print("checked \(report.checked), bad \(report.problems.count)")
            for problem in report.problems { print("bad: \(problem)") }
            if repair { print("repaired: removed \(report.removed), mended \(report.indexRepairs) index records") }
            if !report.problems.isEmpty { throw ExitCode(CommandFailure.userErrorCode) }
        }

        /// `--manifest`: one line per entry that is missing or differs, then a summary.
        private func verify(against path: String, store: CacheStore) throws {
            let loaded: CacheManifest
            do {
                loaded = try CacheManifest.load(contentsOf: path)
            } catch {
                throw CommandFailure.user(error.description)
            }
            let problems = store.check(loaded)
            for problem in problems { print("\(problem.kind.rawValue)  \(problem.entry.url)  \(problem.detail)") }
            print("manifest \(path): \(loaded.entries.count) entries, \(problems.count) missing or different")
            if !problems.isEmpty { throw ExitCode(CommandFailure.userErrorCode) }
        }
    }
}
