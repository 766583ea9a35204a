import Foundation
import Testing
import TollgateTesting

/// The tests' child processes: every byte they write is collected, however much, and at once.
@Suite("ChildProcess collects a child's whole output", .timeLimit(.minutes(1)))
struct ChildProcessOutputTests {
    @Test("Far more than a pipe holds, on both pipes, arrives whole without waiting for a timeout")
    func largeOutput() async throws {
        let started = ContinuousClock.now
        let result = try await ChildProcess.run(
            "/usr/bin/python3", ["-c", "import sys; sys.stdout.write('o' * 1000000); sys.stderr.write('e' * 300000)"]
        )
        #expect(result.status == 0)
        #expect(result.stdout.utf8.count == 1_000_000)
        #expect(result.stderr.utf8.count == 300_000)
        #expect(ContinuousClock.now - started < .seconds(4), "the five-second drain was not needed")
        for _ in 0..<20 {
            let small = try await ChildProcess.run("/bin/echo", ["a line"])
            #expect(small.stdout == "a line\n")
        }
    }
}
