import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// Every wait of a node ends when the waiting task is cancelled, and leaves nothing behind: two real
/// nodes over loopback (HOST:PORT skips discovery).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CancellationTests {
    /// "At once", against waits of 10 s (a silent server's preamble) and of `TestNodes.patience`:
    /// generous, because the other suites run beside this one on two cores (a 1 MB request read a
    /// byte at a time, 20,000 DNS messages) and other work beside those, and a cancelled task was
    /// seen to resume 0.9 s late under that load. What proves the cancellation is the error code.
    static let atOnce = Duration.seconds(8)

    private func node(_ name: String, _ configure: (inout NodeConfiguration) -> Void = { _ in }) async throws -> (Node, MemorySink) {
        let made = try await TestNodes.make(name, configure)
        return (made.node, made.events)
    }

    /// Runs `work`, cancels it once `waiting` says it waits (or after a moment), and returns how long
    /// it took to end and how.
    private func cancelled<T: Sendable>(
        once waiting: () -> Bool = { true }, _ work: @escaping @Sendable () async throws -> T
    ) async -> (Duration, NearbyError?) {
        let clock = ContinuousClock()
        let task = Task { () -> NearbyError? in
            do {
                _ = try await work()
                return nil
            } catch {
                return (error as? NearbyError) ?? .connectionFailed("\(error)")
            }
        }
        try? await Task.sleep(for: .milliseconds(100))
        #expect(await TestNodes.eventually(waiting), "the work never reached its wait")
        let start = clock.now
        task.cancel()
        let error = await task.value
        return (clock.now - start, error)
    }

    @Test func anAcceptWaitingForAnInvitationEndsAtOnceAndLeavesNoWaiter() async throws {
        let (host, _) = try await node("host")
        let (elapsed, error) = await cancelled { try await host.accept(nil, decline: false, client: nil) }
        #expect(elapsed < Self.atOnce)
        #expect(error?.code == "cancelled")
        // The next invitation finds no ghost to take it: nobody answers, so it times out.
        let (guest, _) = try await node("guest")
        let port = await host.port
        let unanswered = await #expect(throws: NearbyError.self) {
            // Long enough for the connection and handshake on a loaded machine: the answer is what times out.
            try await guest.invite("127.0.0.1:\(port)", context: nil, timeout: 3, client: nil)
        }
        #expect(unanswered?.code == "invitation-timeout")
        await host.stop()
        await guest.stop()
    }

    @Test func anInvitationWaitingForItsAnswerEndsAtOnceAndIsWithdrawn() async throws {
        let (host, hostEvents) = try await node("host")
        let (guest, _) = try await node("guest")
        let port = await host.port
        // Cancelled once the host has the invitation (on a loaded machine the handshake alone can
        // outlast any fixed moment), so what is cancelled is the wait for the answer.
        let (elapsed, error) = await cancelled(once: { hostEvents.lines.contains { $0.contains(#""event":"invitation""#) } }) {
            try await guest.invite("127.0.0.1:\(port)", context: nil, timeout: TestNodes.patience, client: nil)
        }
        #expect(elapsed < Self.atOnce)
        #expect(error?.code == "cancelled")
        // The host saw the invitation and then its withdrawal.
        #expect(await TestNodes.waitFor(hostEvents, #""event":"declined""#))
        await host.stop()
        await guest.stop()
    }

    @Test func aListenerWaitingForAStreamEndsAtOnce() async throws {
        let (host, _) = try await node("host")
        let (elapsed, error) = await cancelled {
            try await host.listenForStream(name: nil, from: nil, source: EmptySource(), sink: NullByteSink(), client: nil)
        }
        #expect(elapsed < Self.atOnce)
        #expect(error?.code == "cancelled")
        await host.stop()
    }

    @Test func anInvitationToAServerThatNeverAnswersEndsAtOnce() async throws {
        let (host, _) = try await node("host")
        // A listener that takes the connection and never says a word: the preamble would wait 10 s.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = silent.localAddress?.port ?? 0
        let (elapsed, error) = await cancelled { try await host.invite("127.0.0.1:\(port)", context: nil, timeout: TestNodes.patience, client: nil) }
        #expect(elapsed < Self.atOnce)
        #expect(error?.code == "cancelled")
        try await silent.close()
        await host.stop()
    }
}

private struct EmptySource: ByteSource {
    func next() async throws -> ByteBuffer? { nil }
}

private struct NullByteSink: ByteSink {
    func write(_ buffer: ByteBuffer) async throws {}
    func finish() async {}
}
