import Foundation
import Testing
@testable import NearbyWeb
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `send-file --web` serves only the file it listed: the pure check of what was opened, and the
/// real open of a file swapped for a link, a FIFO and another file.
@Suite struct ListedFileTests {
    let listed = FileIdentity(device: 7, inode: 42)

    @Test func onlyTheListedRegularFilePasses() {
        #expect(ListedFile.check(mode: S_IFREG | 0o644, identity: listed, listed: listed) == nil)
        #expect(ListedFile.check(mode: S_IFREG | 0o644, identity: FileIdentity(device: 7, inode: 43), listed: listed) == .replaced)
        #expect(ListedFile.check(mode: S_IFREG | 0o644, identity: FileIdentity(device: 8, inode: 42), listed: listed) == .replaced)
        #expect(ListedFile.check(mode: S_IFREG | 0o644, identity: listed, listed: nil) == .replaced)
        #expect(ListedFile.check(mode: S_IFLNK | 0o777, identity: listed, listed: listed) == .link)
        #expect(ListedFile.check(mode: S_IFIFO | 0o644, identity: listed, listed: listed) == .notRegular("a FIFO"))
        #expect(ListedFile.refusal(errno: ELOOP) == .link)
        #expect(ListedFile.refusal(errno: ENOENT) == .gone)
    }

    @Test func aSwappedFileIsNotOpened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-listed-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/shared.txt"
        try Data("shared".utf8).write(to: URL(fileURLWithPath: path))
        let files = try FileList.collect([path])
        let file = try #require(files.first)
        guard case let .success(fd) = await ListedFile.open(file) else { Issue.record("the listed file was refused"); return }
        close(fd)
        // Another file under the name (made while the first still exists: its inode is another).
        try Data("other".utf8).write(to: URL(fileURLWithPath: directory + "/other"))
        #expect(rename(directory + "/other", path) == 0)
        #expect(await refusal(file) == .replaced)
        // A link to a file outside.
        try FileManager.default.removeItem(atPath: path)
        try Data("outside".utf8).write(to: URL(fileURLWithPath: directory + "/outside"))
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: directory + "/outside")
        #expect(await refusal(file) == .link)
        #expect(ListedFile.stillListed(file) == .link)
        // A FIFO: refused at once, not waiting for a writer.
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o644) == 0)
        #expect(await refusal(file) == .notRegular("a FIFO"))
        try FileManager.default.removeItem(atPath: path)
        #expect(await refusal(file) == .gone)
    }

    func refusal(_ file: OutgoingFile) async -> ListedFile.Refusal? {
        switch await ListedFile.open(file) {
        case let .success(fd):
            close(fd)
            return nil
        case let .failure(refusal): return refusal
        }
    }
}
