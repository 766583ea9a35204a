#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stops the run when an invariant of the parser under test does not hold.
///
/// libFuzzer sees the abort as a crash, writes the input to `crash-<sha1>` and `make fuzz`
/// fails with the path: a broken invariant is a finding like a memory error.
public func fuzzCheck(
    _ condition: @autoclosure () -> Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if condition() { return }
    // write(2), not fputs to stderr: Swift 6 refuses the C global `stderr` as shared mutable state.
    let text = "fuzz invariant broken at \(file):\(line): \(message())\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    abort()
}
