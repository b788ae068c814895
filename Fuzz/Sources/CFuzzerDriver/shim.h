// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer). SwiftPM links an executable's
// main() as <module>_main, so nearby-fuzz defines that and hands over to libFuzzer here.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
