import Crypto
import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import NearbyCore

@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every TCP connection nearby makes or takes has Nagle's algorithm off at the TCP level, and asks
/// for nothing at the socket level that needs privilege. Read back from live sockets with
/// getsockopt(2), not from what the bootstrap was told: `.socketOption(.tcp_nodelay)` once asked for
/// option 1 at SOL_SOCKET, which is SO_DEBUG, refused without CAP_NET_ADMIN (every connection of an
/// ordinary user failed) and silently granted to root.
@Suite struct SocketOptionTests {
    struct Read: Equatable, CustomStringConvertible {
        let noDelay: Int
        let debug: Int
        var description: String { "TCP_NODELAY \(noDelay), SO_DEBUG \(debug)" }
    }

    static func read(_ channel: any Channel) async throws -> Read {
        Read(noDelay: try await channel.getOption(.tcpOption(.tcp_nodelay)),
             debug: try await channel.getOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_DEBUG))))
    }

    static let wanted = Read(noDelay: 1, debug: 0)

    @Test func aSessionConnectionHasNoDelayOnBothSidesAndNoSocketLevelOption() async throws {
        TestNodes.relaxDeadlines()
        let identity = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "options")
        let tls = try SessionTLS.contexts(for: identity)
        let accepted = Locked<[Negotiated]>([])
        let listener = try await Connections.listen(port: 0, preference: .optional, tls: tls.server) { negotiated in
            accepted.withLock { $0.append(negotiated) }
        }
        defer { listener.close(promise: nil) }
        let port = try #require(listener.localAddress?.port)
        let client = try await Connections.connect(host: "127.0.0.1", port: port, preference: .optional, tls: tls.client)
        guard case let .frames(ours) = client else { Issue.record("not a nearby connection: \(client)"); return }
        defer { ours.channel.channel.close(promise: nil) }
        #expect(try await Self.read(ours.channel.channel) == Self.wanted, "the connection nearby makes")

        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while accepted.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let first = accepted.withLock { $0.first }
        guard case let .frames(theirs) = first else {
            Issue.record("the listener did not negotiate: \(String(describing: first))"); return
        }
        defer { theirs.channel.channel.close(promise: nil) }
        #expect(try await Self.read(theirs.channel.channel) == Self.wanted, "the connection nearby takes")
    }

    /// The compiler cannot tell a TCP option asked for at the socket level; this reads every source.
    @Test func noSourceAsksForATCPOptionAtTheSocketLevel() throws {
        let offenders = try OneOfEachTests.sourceLines().filter { $0.text.contains("socketOption(.tcp_") }.map(\.place)
        #expect(offenders.isEmpty, "TCP options belong at the TCP level (.tcpOption): \(offenders)")
    }
}

/// A listen that fails says why in words, with what to do; a port below 1024 is the one case where
/// root and an ordinary user differ.
@Suite struct ListenWordsTests {
    @Test func aPrivilegedPortNamesTheCapabilityAndWhatToDo() {
        let words = ErrorWords.listening(IOError(errnoCode: EACCES, reason: "bind(descriptor:ptr:bytes:)"), port: 80)
        #expect(words.contains("port 80") && words.contains("CAP_NET_BIND_SERVICE") && words.contains("1024"))
        #expect(!words.contains("errno") && !words.contains("descriptor"))
    }

    @Test func aTakenPortIsSaidSo() {
        #expect(ErrorWords.listening(IOError(errnoCode: EADDRINUSE, reason: "bind"), port: 53317, transport: "UDP")
            == "UDP port 53317 is taken by another program")
    }

    @Test func aSessionListenerOnAPrivilegedPortFailsInWordsForAUser() async throws {
        // As root the bind succeeds (nothing to say); as a user it must fail in words.
        guard geteuid() != 0 else { return }
        let identity = Identity(privateKey: P256.Signing.PrivateKey(), displayName: "words")
        let tls = try SessionTLS.contexts(for: identity)
        do {
            let channel = try await Connections.listen(port: 80, preference: .optional, tls: tls.server) { _ in }
            channel.close(promise: nil)
            Issue.record("a user listened on port 80")
        } catch {
            #expect(error.errorDescription?.contains("CAP_NET_BIND_SERVICE") == true)
        }
    }
}
