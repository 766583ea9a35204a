import Foundation
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite(
    "Malloc tuning: large buffers come from the heap and are reused", .serialized, .timeLimit(.minutes(2)),
    .disabled(if: BuildSanitizer.any, "a sanitizer's allocator replaces glibc malloc, which the tuning is for")
)
struct MallocTuningTests {
    // In a fresh process (an exit test): with the settings applied, a 512 KiB block comes from
    // the heap. (glibc's own settings map it on its own, unless the process already freed a
    // larger mapped block — which raises glibc's bound — so only this side is certain; in the test
    // process itself malloc serves any size from free heap when it has some.)
    @Test("apply: in a fresh process a 512 KiB block comes from the heap")
    func thresholds() async {
        await #expect(processExitsWith: .success) {
            guard MallocTuning.apply(environment: [:], eventLoops: 1), let block = malloc(512 * 1024) else { exit(2) }
            exit(MallocTuning.isMapped(block) ? 1 : 0)
        }
    }

    @Test("GLIBC_TUNABLES with malloc settings leaves glibc's settings as given; other tunables do not")
    func tunablesWin() {
        let mallocTunable = ["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"]
        let other = ["GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=512"]
        #expect(!MallocTuning.apply(environment: mallocTunable, eventLoops: 1))
        #expect(MallocTuning.apply(environment: other, eventLoops: 1))
    }

    /// Starts `threads` threads that each allocate and hold a block until all have, and returns
    /// how many arenas malloc has then, less the count before (-100 when malloc could not say).
    private static func arenasAddedByThreads(_ threads: Int = 6) -> Int {
        guard let before = MallocTuning.arenaCount() else { return -100 }
        let allocated = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<threads {
            // Each thread holds its block until all have allocated, so none hands its arena on.
            Thread.detachNewThread {
                let block = malloc(4096)
                allocated.signal()
                release.wait()
                free(block)
            }
        }
        for _ in 0..<threads { allocated.wait() }
        let after = MallocTuning.arenaCount() ?? (before - 100)
        for _ in 0..<threads { release.signal() }
        return after - before
    }

    // In a fresh process: once applied for one event loop, threads that start and allocate
    // together share the arenas there are.
    @Test("apply: threads started afterwards allocate without adding malloc arenas")
    func arenaLimit() async {
        await #expect(processExitsWith: .success) {
            guard MallocTuning.apply(environment: [:], eventLoops: 1) else { exit(2) }
            exit(Self.arenasAddedByThreads() == 0 ? 0 : 1)
        }
    }

    // The same without the settings: glibc gives each such thread an arena of its own (up to 8
    // per core), which is what the test above would see if the limit were not applied.
    @Test("without the settings, threads started together add malloc arenas")
    func arenasWithoutLimit() async {
        await #expect(processExitsWith: .success) {
            exit(Self.arenasAddedByThreads() > 0 ? 0 : 1)
        }
    }

    @Test("the arena limit is one per event loop, at least one; the loop count comes from NIO's variable")
    func arenaLimitFromLoops() {
        #expect(MallocTuning.arenaLimit(eventLoops: 1) == 1)
        #expect(MallocTuning.arenaLimit(eventLoops: 4) == 4)
        #expect(MallocTuning.arenaLimit(eventLoops: 0) == 1)
        #expect(MallocTuning.eventLoopCount(environment: ["NIO_SINGLETON_GROUP_LOOP_COUNT": "3"], processors: 8) == 3)
        let unreadable = ["NIO_SINGLETON_GROUP_LOOP_COUNT": "many"]
        #expect(MallocTuning.eventLoopCount(environment: unreadable, processors: 8) == 8)
        #expect(MallocTuning.eventLoopCount(environment: [:], processors: 2) == 2)
    }

    /// Minor page faults of a process so far (/proc/PID/stat, field 10).
    private static func minorFaults(of pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return try #require(Int(fields[7]))
    }

    /// Serves `clients` concurrent 8 MiB hits from the built executable twice (the first round
    /// fills the heap) and returns the page faults per hit of the second round.
    private static func faultsPerHit(clients: Int = 8) async throws -> Int {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = [UInt8](repeating: 0x61, count: 8 * 1024 * 1024)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: body)
        }
        defer { origin.stop() }
        let file = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port, more: "log:\n  access: \"off\"")
        let served = try await Served.start(["--config", file.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let get = "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let stored = try await request(get, port: port)
        #expect(stored.status == 200 && stored.body.count == body.count)
        func round() async throws {
            try await withThrowingTaskGroup(of: RawResponse.self) { group in
                for _ in 0..<clients { group.addTask { try await request(get, port: port) } }
                for try await response in group {
                    #expect(response.status == 200 && response.body.count == body.count)
                    #expect(response.header("Cache-Status")?.contains("hit") == true)
                }
            }
        }
        try await round()
        let before = try minorFaults(of: served.child.processIdentifier)
        try await round()
        return (try minorFaults(of: served.child.processIdentifier) - before) / clients
    }

    /// The outcome the tuning is for. (Without it the second round faulted in 36 to 700 pages a
    /// hit in trials, depending on how the pieces' frees interleave, so this guards against the
    /// tuning going missing most of the time, not always; `thresholds()` checks the settings.)
    @Test("serve: concurrent 8 MiB hits fault in almost no fresh pages once the heap has grown")
    func servedHitsReuseHeap() async throws {
        try #require(tollgateBinary != nil)
        let faults = try await Self.faultsPerHit()
        // An 8 MiB body is 2048 pages.
        #expect(faults < 128, "\(faults) page faults per hit")
    }
}
