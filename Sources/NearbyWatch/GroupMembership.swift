import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// watch's own membership of the mDNS groups (224.0.0.251 and ff02::fb) on each multicast
/// interface it captures on: behind a switch with IGMP/MLD snooping, a port gets a group's
/// packets only while a host on it has joined, so watch does not depend on the daemon's joining.
/// Two UDP sockets bound to no port (the kernel picks an ephemeral one): they take nothing from
/// the daemon, whose socket alone is bound to 5353 — multicast to 5353 reaches only sockets bound
/// to 5353. The memberships last as long as this object.
package final class GroupMembership {
    private var sockets: [Int32] = []
    /// The interfaces joined, and which groups ("nb0: 224.0.0.251 ff02::fb").
    package private(set) var joined: [String] = []

    /// Joins on `interface`, or (nil) on every interface that is up, multicast and not loopback.
    package init(interface: String?) {
        #if os(Linux)
        let v4 = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let v6 = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        sockets = [v4, v6].filter { $0 >= 0 }
        var small: Int32 = 4096
        for fd in sockets { _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, 4) }
        for name in interface.map({ [$0] }) ?? Self.multicastInterfaces() {
            let index = if_nametoindex(name)
            guard index > 0 else { continue }
            var groups: [String] = []
            if v4 >= 0 {
                var request = ip_mreqn()
                request.imr_multiaddr.s_addr = UInt32(0xE000_00FB).bigEndian
                request.imr_ifindex = Int32(index)
                // 0: IPPROTO_IP, 35: IP_ADD_MEMBERSHIP
                if setsockopt(v4, 0, 35, &request, socklen_t(MemoryLayout<ip_mreqn>.size)) == 0 { groups.append("224.0.0.251") }
            }
            if v6 >= 0 {
                var request = ipv6_mreq()
                withUnsafeMutableBytes(of: &request.ipv6mr_multiaddr) { bytes in
                    for (offset, byte) in [0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFB].enumerated() { bytes[offset] = UInt8(byte) }
                }
                request.ipv6mr_interface = index
                // 41: IPPROTO_IPV6, 20: IPV6_ADD_MEMBERSHIP
                if setsockopt(v6, 41, 20, &request, socklen_t(MemoryLayout<ipv6_mreq>.size)) == 0 { groups.append("ff02::fb") }
            }
            if !groups.isEmpty { joined.append("\(name): " + groups.joined(separator: " ")) }
        }
        #endif
    }

    deinit { for fd in sockets { close(fd) } }

    /// Up, multicast, not loopback (IFF_UP 0x1, IFF_LOOPBACK 0x8, IFF_MULTICAST 0x1000).
    static func multicastInterfaces() -> [String] {
        var names: [String] = []
        #if os(Linux)
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var cursor = list
        while let entry = cursor {
            let flags = entry.pointee.ifa_flags
            if flags & 0x1 != 0, flags & 0x8 == 0, flags & 0x1000 != 0, let name = entry.pointee.ifa_name {
                let text = String(cString: name)
                if !names.contains(text) { names.append(text) }
            }
            cursor = entry.pointee.ifa_next
        }
        #endif
        return names
    }
}
