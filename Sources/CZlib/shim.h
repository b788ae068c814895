#ifndef NEARBY_CZLIB_SHIM_H
#define NEARBY_CZLIB_SHIM_H
// zlib's crc32(), for the streamed .zip of a shared directory (Debian's zlib1g-dev, part of macOS).
#include <zlib.h>
#endif
