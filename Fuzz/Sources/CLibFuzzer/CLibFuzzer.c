// The declaration in include/CLibFuzzer.h is defined by libclang_rt.fuzzer (-sanitize=fuzzer).
