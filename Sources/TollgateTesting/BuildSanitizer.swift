/// Which sanitizer the code was built with: `make test-tsan` and `make test-asan` compile every
/// module with `-DTOLLGATE_TSAN` / `-DTOLLGATE_ASAN` (Makefile). For the few tests that measure
/// something a sanitizer changes by design (its own allocator, stack frames moved to the heap).
public enum BuildSanitizer {
    #if TOLLGATE_TSAN
    public static let thread = true
    #else
    public static let thread = false
    #endif

    #if TOLLGATE_ASAN
    public static let address = true
    #else
    public static let address = false
    #endif

    /// Built with either.
    public static var any: Bool { thread || address }
}
