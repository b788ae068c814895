import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Descriptors passed over a Unix socket (SCM_RIGHTS), and the node's ends of a stream's passed
/// stdin and stdout: what arrives is the same open file, nothing is left open by a bad message,
/// and every passed descriptor is closed and given back to the budget when its stream ends.
@Suite struct DescriptorPassingTests {
    private func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        #if canImport(Glibc)
        let type = Int32(SOCK_STREAM.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        #expect(socketpair(AF_UNIX, type, 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    private func pipePair() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    private func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    @Test func theDescriptorsArriveAsTheSameOpenFiles() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let first = pipePair()
        let second = pipePair()
        defer { for fd in [first.read, first.write, second.read, second.write] { close(fd) } }
        try DescriptorPassing.send([first.write, second.write], on: a)
        let received = try DescriptorPassing.receive(on: b, limit: 2)
        #expect(received.count == 2)
        defer { for fd in received { close(fd) } }
        #expect(fcntl(received[0], F_GETFD) & FD_CLOEXEC != 0)
        var byte: UInt8 = 42
        #expect(write(received[0], &byte, 1) == 1)
        byte = 7
        #expect(write(received[1], &byte, 1) == 1)
        #expect(read(first.read, &byte, 1) == 1 && byte == 42)
        #expect(read(second.read, &byte, 1) == 1 && byte == 7)
    }

    @Test func theByteAloneSaysNothingIsPassed() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        try DescriptorPassing.send([], on: a)
        #expect(try DescriptorPassing.receive(on: b, limit: 2) == [])
    }

    @Test func moreThanOfferedAreClosedNotKept() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let pipe = pipePair()
        defer { close(pipe.read); close(pipe.write) }
        let before = openDescriptors()
        try DescriptorPassing.send([pipe.write, pipe.write, pipe.write], on: a)
        #expect(try DescriptorPassing.receive(on: b, limit: 2) == [])
        #expect(openDescriptors() == before)
    }

    @Test func aSenderThatLeftOrSaysNothingEndsTheWait() throws {
        let (a, b) = try socketPair()
        #expect(throws: DescriptorPassing.Failure.timedOut) {
            try DescriptorPassing.receive(on: b, limit: 2, until: .now + .milliseconds(50))
        }
        close(a)
        #expect(throws: DescriptorPassing.Failure.closed) { try DescriptorPassing.receive(on: b, limit: 2) }
        close(b)
    }

    @Test func aPassedOutputIsWrittenThenClosedAndUncharged() async throws {
        let budget = ResourceBudget(limits: .init(descriptors: 8))
        let pipe = pipePair()
        defer { close(pipe.read) }
        #expect(budget.takeDescriptors(1))
        let ended = OneShot<Void>()
        let output = PassedOutput(PassedDescriptor(pipe.write, budget: budget)) { ended.settle(()) }
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        // Read the other end while writing: the pipe holds 64 KiB.
        // On the blocking pool: a read that blocks must not hold a cooperative thread other tests need.
        async let collected: [UInt8] = Blocking.run { _ in
            var all: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(pipe.read, &chunk, chunk.count)
                if n <= 0 { return all }
                all += chunk[0..<n]
            }
        }
        try await output.write(ByteBuffer(bytes: bytes[..<100_000]))
        try await output.write(ByteBuffer(bytes: bytes[100_000...]))
        await output.finish()
        #expect(ended.isSettled)
        // EOF: the only write end was closed.
        #expect(try await collected == bytes)
        #expect(output.count == UInt64(bytes.count))
        #expect(budget.descriptorsInUse == 0)
    }

    @Test func aPassedOutputWhoseReaderLeftFailsWithoutKillingUs() async throws {
        let budget = ResourceBudget(limits: .init(descriptors: 8))
        let pipe = pipePair()
        close(pipe.read)
        #expect(budget.takeDescriptors(1))
        let output = PassedOutput(PassedDescriptor(pipe.write, budget: budget))
        var failed = false
        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while !failed, ContinuousClock.now < deadline {
            do {
                try await output.write(ByteBuffer(repeating: 1, count: 4096))
                try await Task.sleep(for: .milliseconds(10))
            } catch {
                failed = true
            }
        }
        #expect(failed)
        output.stop()
        try await until { budget.descriptorsInUse == 0 }
    }

    @Test func aPassedInputStopsAndClosesWhileItsWriterIsSilent() async throws {
        let budget = ResourceBudget(limits: .init(descriptors: 8))
        let pipe = pipePair()
        defer { close(pipe.write) }
        #expect(budget.takeDescriptors(1))
        let source = PassedStreamSource(PassedDescriptor(pipe.read, budget: budget))
        var byte: UInt8 = 9
        #expect(write(pipe.write, &byte, 1) == 1)
        let first = try await source.next()
        #expect(first.map { Array($0.readableBytesView) } == [9])
        #expect(source.count == 1)
        // The writer says nothing more; the stream ends anyway.
        source.stop()
        try await until { budget.descriptorsInUse == 0 }
        await #expect(throws: NearbyError.self) { _ = try await source.next() }
    }

    @Test func aPassedInputReadsToTheEnd() async throws {
        let budget = ResourceBudget(limits: .init(descriptors: 8))
        let pipe = pipePair()
        #expect(budget.takeDescriptors(1))
        let source = PassedStreamSource(PassedDescriptor(pipe.read, budget: budget))
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let writer = Task.detached {
            bytes.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let n = write(pipe.write, raw.baseAddress! + done, raw.count - done)
                    if n <= 0 { break }
                    done += n
                }
            }
            close(pipe.write)
        }
        var all: [UInt8] = []
        while let chunk = try await source.next() { all += chunk.readableBytesView }
        await writer.value
        #expect(all == bytes)
        source.stop()
        try await until { budget.descriptorsInUse == 0 }
    }

    @Test func aNodeThatCannotHoldThemDoesNotAsk() {
        let budget = ResourceBudget(limits: .init(descriptors: 1))
        #expect(!budget.takeDescriptors(2))
        #expect(budget.descriptorsInUse == 0)
        #expect(budget.takeDescriptors(1))
        budget.giveDescriptors(1)
    }

    @Test func theOfferTravelsAndOldRequestsStillRead() throws {
        let request = ControlRequest.stream(peer: "bob", name: "", timeout: 30, pass: PassOffer(input: false, output: true))
        let decoded = try JSONDecoder().decode(ControlRequest.self, from: JSONEncoder().encode(request))
        #expect(decoded.passOffer == PassOffer(input: false, output: true))
        #expect(try ControlReply.decode(ControlReply.passDescriptors.line) == .passDescriptors)
        #expect(throws: NearbyError.self) { try ControlReply.decode(#"{"pass_descriptors":true,"status":0}"#) }
    }

    private func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(TestNodes.patience)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met within \(TestNodes.patience) s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
