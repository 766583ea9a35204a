/*
 * Preloaded into the release-build test pass (make test, make test-release): glibc's backtrace()
 * made to return no frames.
 *
 * swift-testing captures a backtrace for every issue it records (a failed #expect), through
 * glibc's backtrace(), whose libgcc unwinder crashes walking the link-time-optimized test
 * binary's frames (SIGSEGV in libgcc_s, under Backtrace.current). The pass then died without
 * naming the test that failed. With this, the failure is reported like any other; only the
 * (unused) backtrace is empty. Nothing else in the test process calls backtrace(); the Swift
 * runtime's crash reports use their own unwinder.
 */
int backtrace(void **buffer, int size) {
    (void)buffer;
    (void)size;
    return 0;
}
