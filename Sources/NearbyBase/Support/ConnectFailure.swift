import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a TCP connection could not be made, in words a person can act on: refused (nothing listens
/// there), no answer (a firewall that drops, or no such host up), unreachable — for each address
/// tried, instead of NIO's error text.
package enum ConnectFailure {
    package static func describe(_ error: any Error, timeout: TimeAmount) -> String? {
        switch error {
        case let error as NIOConnectionError:
            let failures = error.connectionErrors
            if failures.isEmpty { return error.dnsAError.map { "cannot resolve \(error.host): \($0)" } ?? "no address to try for \(error.host)" }
            // One address: its reason; several (IPv4 and IPv6): each address with its own.
            if failures.count == 1, let only = failures.first { return reason(only.error, timeout: timeout) }
            return failures.map { "\(AddressWords.describe($0.target)) \(reason($0.error, timeout: timeout))" }.joined(separator: "; ")
        case ChannelError.connectTimeout:
            return reason(error, timeout: timeout)
        case let error as IOError:
            return reason(error, timeout: timeout)
        default:
            return nil
        }
    }

    /// Nothing listens there (ECONNREFUSED), for every address tried.
    package static func isRefusal(_ error: any Error) -> Bool { every(error, failedWith: ECONNREFUSED) }

    /// No host has that address (EHOSTUNREACH: ARP or neighbour discovery got no answer), for
    /// every address tried.
    package static func isNoHost(_ error: any Error) -> Bool { every(error, failedWith: EHOSTUNREACH) }

    private static func every(_ error: any Error, failedWith code: Int32) -> Bool {
        switch error {
        case let error as NIOConnectionError:
            return !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { every($0.error, failedWith: code) }
        case let error as IOError:
            return error.errnoCode == code
        default:
            return false
        }
    }

    private static func reason(_ error: any Error, timeout: TimeAmount) -> String {
        let seconds = (Double(timeout.nanoseconds) / 1e8).rounded() / 10
        let wait = seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
        switch error {
        case ChannelError.connectTimeout:
            return "did not answer within \(wait) (a firewall dropping the packets, or the host is down)"
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return "refused the connection (nothing listens on that port)"
            case ENETUNREACH: return "is unreachable (no route to that network)"
            case EHOSTUNREACH: return "is unreachable (no route to that host)"
            case ETIMEDOUT: return "did not answer within \(wait) (a firewall dropping the packets, or the host is down)"
            default: return "failed: \(String(cString: strerror(error.errnoCode)))"
            }
        default:
            return "failed: \(ErrorWords.describe(error))"
        }
    }
}
