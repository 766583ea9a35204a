// Why Tests/Sanitizers/tsan.supp suppresses races seen from a resumed Swift task: a correct
// program, no Tollgate code, that ThreadSanitizer on Linux (Swift 6.3.1) reports. A value is
// written on a thread, handed over by resuming a continuation, then read by the resumed task.
//
//   swiftc -sanitize=thread -g Tests/Sanitizers/continuation-probe.swift -o /tmp/probe && /tmp/probe
//
// It prints "WARNING: ThreadSanitizer: Swift access race" (on the main actor instead of a detached
// task it does not). When a toolchain stops reporting it, the suppression can go.
import Foundation
final class Box: @unchecked Sendable { var value = 0 }
func viaThread() async -> Box {
    await withCheckedContinuation { (c: CheckedContinuation<Box, Never>) in
        let t = Thread {
            let b = Box()
            b.value = 42  // written on the thread, before resuming
            c.resume(returning: b)
        }
        t.start()
    }
}
let task = Task.detached {
    for _ in 0..<200 {
        let b = await viaThread()
        b.value += 1  // read and written by the resumed task
    }
}
_ = await task.value
print("done")
