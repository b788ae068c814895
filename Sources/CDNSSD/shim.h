#ifndef NEARBY_CDNSSD_SHIM_H
#define NEARBY_CDNSSD_SHIM_H
// On Linux the header comes from libavahi-compat-libdnssd-dev (NearbyDiscovery links -ldns_sd); on macOS
// it is part of the system and libSystem provides the symbols.
#if defined(__linux__)
#include <avahi-compat-libdns_sd/dns_sd.h>
#else
#include <dns_sd.h>
#endif
#endif
