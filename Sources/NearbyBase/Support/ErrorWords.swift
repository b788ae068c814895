import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error of a library above the base that says itself in words a person reads: TLS's errors
/// conform where TLS is (NearbyWire's TLSErrorWords.swift), so the base needs no TLS library.
package protocol ErrorInWords: Error {
    var inWords: String { get }
}

/// An error from a library (NIO, NIOSSL, the system) in words a person reads: never its type's
/// name, its enum case or `errno: 111` in an event, a sentence or a hint. Our own errors keep
/// their sentences.
package enum ErrorWords {
    package static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NearbyError: return error.errorDescription ?? "failed"
        case let error as NIOConnectionError: return ConnectFailure.describe(error, timeout: .seconds(10)) ?? "could not connect"
        case let error as IOError: return String(cString: strerror(error.errnoCode))
        case let error as ChannelError: return channel(error)
        case let error as any ErrorInWords: return error.inWords
        case is CancellationError: return "cancelled"
        default:
            // Ours say themselves (LocalizedError, CustomStringConvertible: a failed handshake, a
            // protocol violation).
            return (error as? any LocalizedError)?.errorDescription ?? "\(error)"
        }
    }

    /// Why listening on `transport` `port` failed, with what to do: a port below 1024 is the one
    /// thing here that differs between root and an ordinary user.
    package static func listening(_ error: any Error, port: Int, transport: String = "TCP") -> String {
        guard let error = error as? IOError else { return describe(error) }
        switch error.errnoCode {
        case EACCES where port > 0 && port < 1024:
            return "\(transport) port \(port) is below 1024, where only root or a program with CAP_NET_BIND_SERVICE may listen: "
                + "choose a port from 1024 up (--port 0: any free one)"
        case EADDRINUSE: return "\(transport) port \(port) is taken by another program"
        case EADDRNOTAVAIL: return "this host has no such address to listen on"
        default: return "\(transport) port \(port): \(describe(error))"
        }
    }

    private static func channel(_ error: ChannelError) -> String {
        switch error {
        case .connectTimeout: "no answer in time"
        case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed, .eof: "the connection was closed"
        case .writeHostUnreachable: "the host is unreachable"
        default: "the connection failed"
        }
    }
}
