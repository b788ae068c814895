import Foundation
import PropertyBased
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `FileList.collect` walks directories with readdir and one `fstatat` an entry; it must list
/// exactly what FileManager's enumerator and `attributesOfItem` listed (`Legacy`, the code it
/// replaced), to the last bit of each modification time: the transfer key depends on it.
@Suite struct FileListTests {
    typealias Listing = (files: [OutgoingFile], skipped: [FileList.Skipped])

    static func listing(_ paths: [String]) throws -> Listing {
        var skipped: [FileList.Skipped] = []
        let files = try FileList.collect(paths) { skipped.append($0) }
        // The nanoseconds sent to a receiver that keeps dates are the same time as `modified`,
        // which the legacy listing had alone.
        for file in files where file.directory != true {
            let nanoseconds = Double(file.modifiedNanoseconds ?? 0) / 1e9
            #expect(abs(nanoseconds - file.modified) < 1e-5, "\(file.relative): \(nanoseconds) against \(file.modified)")
        }
        // Every file carries the device and inode it was listed with (what `send-file --web` serves).
        for file in files where file.directory != true {
            var info = stat()
            #expect(stat(file.source, &info) == 0 && file.identity == FileIdentity(info), "\(file.relative): its identity")
        }
        return (files.map { var file = $0; file.modifiedNanoseconds = nil; file.identity = nil; return file }, skipped)
    }

    static func legacy(_ paths: [String]) throws -> Listing {
        var skipped: [FileList.Skipped] = []
        let files = try Legacy.collect(paths) { skipped.append($0) }
        return (files, skipped)
    }

    static func temporary() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-list-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A tree of what a folder holds: hidden and Unicode names, nested and empty directories,
    /// links to files, to directories and to nowhere, a FIFO, odd modification times.
    static func makeTree(_ root: String, _ rng: inout some RandomNumberGenerator) throws {
        let names = ["a.txt", ".hidden", "B", "é", "e\u{301}", "日本.jpg", "sp ace", "z", ".git", "x.tar.gz", "-dash", "Ω", "[1]"]
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var directories = [root]
        for _ in 0..<Int.random(in: 1...30, using: &rng) {
            let parent = directories.randomElement(using: &rng) ?? root
            let path = parent + "/" + (names.randomElement(using: &rng) ?? "n") + String(Int.random(in: 0..<3, using: &rng))
            var existing = stat()
            guard lstat(path, &existing) != 0 else { continue }
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...4:
                _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: Int.random(in: 0..<100, using: &rng)))
                let time = timespec(tv_sec: Int.random(in: 0..<4_000_000_000, using: &rng), tv_nsec: Int.random(in: 0..<1_000_000_000, using: &rng))
                var times = [time, time]
                utimensat(AT_FDCWD, path, &times, 0)
            case 5, 6:
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                directories.append(path)
            case 7: symlink(directories.randomElement(using: &rng) ?? root, path)
            case 8: symlink("nowhere", path)
            default: mkfifo(path, 0o644)
            }
        }
    }

    @Test func listsWhatFileManagerListed() async throws {
        await propertyCheck(count: 40, input: Generator(run: { rng in rng.next() })) { seed in
            var rng = Xoshiro(seed: (seed, 1, 2, 3))
            do {
                let root = try Self.temporary()
                defer { try? FileManager.default.removeItem(atPath: root) }
                try Self.makeTree(root + "/tree", &rng)
                let now = try Self.listing([root + "/tree"]), before = try Self.legacy([root + "/tree"])
                #expect(now.files == before.files)
                #expect(now.skipped == before.skipped)
            } catch {
                Issue.record(error)
            }
        }
    }

    @Test func aNameThatIsNotUTF8IsSkippedAsBefore() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/tree", withIntermediateDirectories: true)
        let raw: [CChar] = Array((root + "/tree/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0x61, 0]
        close(open(raw, O_CREAT | O_WRONLY, 0o644))
        _ = FileManager.default.createFile(atPath: root + "/tree/fine", contents: Data("x".utf8))
        let now = try Self.listing([root + "/tree"]), before = try Self.legacy([root + "/tree"])
        #expect(now.files == before.files && now.skipped == before.skipped)
        #expect(now.skipped.map(\.reason) == ["cannot read its attributes"])
    }

    @Test func emptyTreesAndFilesGivenAsThemselves() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/one.txt", contents: Data("one".utf8))
        let paths = [root + "/empty", root + "/one.txt", root + "/empty/"]
        let now = try Self.listing(paths), before = try Self.legacy(paths)
        #expect(now.files == before.files && now.skipped == before.skipped)
    }

    /// What changed on purpose: a link given on the command line is followed, as documented.
    /// FileManager's enumerator did not enter a linked directory (it was sent empty), and
    /// `attributesOfItem` announced a linked file with the link's own size.
    @Test func linksGivenAreFollowed() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/real/inside.txt", contents: Data("inside".utf8))
        _ = FileManager.default.createFile(atPath: root + "/file.txt", contents: Data("a longer content".utf8))
        symlink(root + "/real", root + "/linked")
        symlink(root + "/file.txt", root + "/linked.txt")
        let files = try FileList.collect([root + "/linked", root + "/linked.txt"])
        #expect(files.map(\.relative) == ["linked/inside.txt", "linked.txt"])
        #expect(files.map(\.size) == [6, 16])
    }
}

/// `FileList.collect` as it was, on FileManager: the reference.
enum Legacy {
    static func collect(_ paths: [String], skipped: (FileList.Skipped) -> Void) throws -> [OutgoingFile] {
        var files: [OutgoingFile] = []
        let manager = FileManager.default
        for path in paths {
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else { throw NearbyError.ioFailure(path: path, reason: "missing") }
            let name = URL(fileURLWithPath: path).standardizedFileURL.lastPathComponent
            if !isDirectory.boolValue {
                files.append(try describe(path, relative: name))
                continue
            }
            guard let walker = manager.enumerator(atPath: path) else { throw NearbyError.ioFailure(path: path, reason: "cannot list") }
            var inside: [String] = []
            while let entry = walker.nextObject() as? String { inside.append(entry) }
            if inside.isEmpty { files.append(FileList.emptyDirectory(path, relative: name)) }
            for entry in inside.sorted() {
                let full = path + "/" + entry
                var info = stat()
                guard lstat(full, &info) == 0 else {
                    skipped(FileList.Skipped(path: name + "/" + entry, reason: "cannot read its attributes"))
                    continue
                }
                switch info.st_mode & S_IFMT {
                case S_IFREG: files.append(try describe(full, relative: name + "/" + entry))
                case S_IFDIR:
                    if (try? manager.contentsOfDirectory(atPath: full))?.isEmpty == true {
                        files.append(FileList.emptyDirectory(full, relative: name + "/" + entry))
                    }
                case S_IFLNK: skipped(FileList.Skipped(path: name + "/" + entry, reason: "a symbolic link: links inside a directory are not followed"))
                case let mode: skipped(FileList.Skipped(path: name + "/" + entry, reason: "\(FileList.kind(mode)), not a regular file"))
                }
            }
        }
        return files
    }

    static func describe(_ path: String, relative: String) throws -> OutgoingFile {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return OutgoingFile(source: path, relative: relative, size: size, modified: modified)
    }
}
