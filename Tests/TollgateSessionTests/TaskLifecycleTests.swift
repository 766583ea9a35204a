import Testing
@testable import TollgateSession

@Suite("Task lifecycle state machine")
struct TaskLifecycleTests {
    @Test("A new task is suspended and its first resume starts it")
    func firstResumeStarts() {
        var machine = TaskLifecycle()
        #expect(machine.state == .suspended(started: false))
        #expect(machine.resume() == .start)
        #expect(machine.state == .running)
        #expect(machine.resume() == .none)
    }

    @Test("Suspend and resume pause and unpause a started task")
    func suspendResume() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        #expect(machine.suspend() == .pause)
        #expect(machine.suspend() == .none)
        #expect(machine.resume() == .unpause)
    }

    @Test("Cancel works from suspended and running, once")
    func cancelOnce() {
        var fresh = TaskLifecycle()
        #expect(fresh.cancel() == .cancel)
        #expect(fresh.state == .canceling)
        #expect(fresh.cancel() == .none)
        #expect(fresh.resume() == .none)
        #expect(fresh.finished() == .complete)
        #expect(fresh.state == .completed)

        var running = TaskLifecycle()
        _ = running.resume()
        #expect(running.cancel() == .cancel)
    }

    @Test("A completed task ignores every event")
    func completedIsFinal() {
        var machine = TaskLifecycle()
        _ = machine.resume()
        #expect(machine.finished() == .complete)
        #expect(machine.finished() == .none)
        #expect(machine.resume() == .none)
        #expect(machine.suspend() == .none)
        #expect(machine.cancel() == .none)
        #expect(machine.state == .completed)
    }
}
