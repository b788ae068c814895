#ifndef NEARBY_CQRENCODE_SHIM_H
#define NEARBY_CQRENCODE_SHIM_H
// libqrencode: Debian's libqrencode-dev, Homebrew's qrencode. The QR code of a web page's address.
#include <qrencode.h>
#endif
