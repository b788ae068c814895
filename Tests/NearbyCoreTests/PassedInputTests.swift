import Foundation
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#endif

/// A stream client's stdin read by the node itself: only the very file the client named, from its
/// offset, and never after the client left.
@Suite struct PassedInputTests {
    private func file(_ bytes: [UInt8]) throws -> (path: String, input: PassedInput) {
        let path = NSTemporaryDirectory() + "nearby-passed-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var info = stat()
        #expect(stat(path, &info) == 0)
        return (path, PassedInput(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), offset: 0))
    }

    private func readAll(_ source: PassedInputSource) async throws -> [UInt8] {
        var out: [UInt8] = []
        while let chunk = try await source.next() { out += chunk.readableBytesView }
        return out
    }

    @Test func theNamedFileIsReadFromItsOffset() async throws {
        let bytes = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var (path, input) = try file(bytes)
        defer { unlink(path) }
        input.offset = 1000
        let source = try #require(PassedInputSource(path: input.path, device: input.device, inode: input.inode, offset: input.offset))
        #expect(try await readAll(source) == Array(bytes[1000...]))
        source.stop()
    }

    @Test func anotherFileAtThatPathIsRefused() throws {
        var (path, input) = try file([1, 2, 3])
        defer { unlink(path) }
        input.inode += 1
        #expect(PassedInputSource(path: input.path, device: input.device, inode: input.inode, offset: input.offset) == nil)
    }

    @Test func aPipeIsRefusedWithoutBlocking() throws {
        let path = NSTemporaryDirectory() + "nearby-fifo-\(UUID().uuidString)"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        var info = stat()
        #expect(stat(path, &info) == 0)
        // Nobody writes to it: a blocking open would never return.
        #expect(PassedInputSource(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), offset: 0) == nil)
    }

    @Test func afterStopNothingMoreIsRead() async throws {
        let (path, input) = try file([UInt8](repeating: 5, count: 10_000))
        defer { unlink(path) }
        let source = try #require(PassedInputSource(path: input.path, device: input.device, inode: input.inode, offset: input.offset))
        source.stop()
        await #expect(throws: NearbyError.self) { _ = try await source.next() }
    }

    @Test func aRequestWithoutInputStillDecodes() throws {
        let old = #"{"stream":{"peer":"bob","name":"x","timeout":30}}"#
        #expect(try JSONDecoder().decode(ControlRequest.self, from: Data(old.utf8)) == .stream(peer: "bob", name: "x", timeout: 30))
        let passed = PassedInput(path: "/proc/1/fd/0", device: 1, inode: 2, offset: 3)
        let request = ControlRequest.listen(name: nil, from: nil, input: passed)
        #expect(try JSONDecoder().decode(ControlRequest.self, from: JSONEncoder().encode(request)).passedInput == passed)
    }
}
