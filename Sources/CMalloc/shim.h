#ifndef NEARBY_CMALLOC_SHIM_H
#define NEARBY_CMALLOC_SHIM_H
// mallopt(3) and mallinfo2(3), for MemoryBudget (glibc's <malloc.h> is not in Swift's Glibc module).
// A module of its own so that the base does not reach dns_sd.h for it.
#if defined(__linux__)
#include <malloc.h>
#endif
#endif
