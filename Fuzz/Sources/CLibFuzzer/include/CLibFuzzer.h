// libFuzzer's driver entry point (compiler-rt's FuzzerInterface.h), which the fuzz targets call
// from their own `main`: SwiftPM on Linux names an executable's entry point `<Target>_main` and
// aliases `main` to it, so libFuzzer's own `main` is never linked in.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
