import Foundation

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files a `send-file` names: files as themselves, directories recursively with their relative
/// paths kept (under the directory's own name). Symbolic links are followed for the paths given
/// (a link to a directory sends the directory), skipped inside directories. A path given that is neither a regular file nor a directory (a
/// FIFO, `/dev/null`) is refused; inside a directory, such entries are skipped, each reported with
/// why (`Skipped`, a `skipped` event).
package struct OutgoingFile: Sendable, Equatable, Codable {
    package var source: String
    package var relative: String
    package var size: UInt64
    package var modified: Double
    /// An empty directory of a sent tree (`photos/empty`): recreated on the receiving side.
    package var directory: Bool? = nil
    /// The modification time to the nanosecond (since 1970), sent to a receiver that keeps it;
    /// nil before 1970.
    package var modifiedNanoseconds: UInt64? = nil
    /// The device and inode it had when it was listed: `send-file --web` serves only that file,
    /// whatever is at the path by the time a browser asks (`ListedFile`). Nil for an empty directory.
    package var identity: FileIdentity? = nil
}

/// A file's device and inode: what it is, whatever its path.
package struct FileIdentity: Sendable, Equatable, Codable {
    package var device: UInt64
    package var inode: UInt64
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
    package init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

package enum FileList {
    /// An entry inside a sent directory that is not sent, and why.
    package struct Skipped: Sendable, Equatable {
        /// As it would have been sent: under the directory's own name.
        package var path: String
        package var reason: String
    }

    package static func collect(
        _ paths: [String], relativeTo base: String = FileManager.default.currentDirectoryPath,
        skipped: (Skipped) -> Void = { _ in }
    ) throws(NearbyError) -> [OutgoingFile] {
        var files: [OutgoingFile] = []
        let manager = FileManager.default
        for given in paths {
            let path = given.hasPrefix("/") ? given : base + "/" + given
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .ioFailure(path: given, reason: "no such file or directory")
            }
            guard manager.isReadableFile(atPath: path) else { throw .ioFailure(path: given, reason: "not readable") }
            let name = URL(fileURLWithPath: path).standardizedFileURL.lastPathComponent
            if !isDirectory.boolValue {
                try requireRegular(path, given: given)
                files.append(try describe(path, relative: name))
                continue
            }
            guard var inside = DirectoryWalk.entries(of: path) else { throw .ioFailure(path: given, reason: "cannot list") }
            if inside.isEmpty { files.append(Self.emptyDirectory(path, relative: name)) }
            inside.sort { $0.relative < $1.relative }
            for entry in inside {
                let full = path + "/" + entry.relative
                let relative = name + "/" + entry.relative
                guard let info = entry.info else {
                    skipped(Skipped(path: relative, reason: "cannot read its attributes"))
                    continue
                }
                switch info.st_mode & S_IFMT {
                case S_IFREG:
                    files.append(OutgoingFile(
                        source: full, relative: relative, size: UInt64(clamping: info.st_size), modified: DirectoryWalk.modified(info),
                        modifiedNanoseconds: DirectoryWalk.modifiedNanoseconds(info), identity: FileIdentity(info)))
                case S_IFDIR:
                    // Its entries follow; an empty one is sent as itself, so the tree arrives as sent.
                    if entry.isEmptyDirectory { files.append(Self.emptyDirectory(full, relative: relative)) }
                case S_IFLNK: skipped(Skipped(path: relative, reason: "a symbolic link: links inside a directory are not followed"))
                case let mode: skipped(Skipped(path: relative, reason: "\(kind(mode)), not a regular file"))
                }
            }
        }
        return files
    }

    /// A FIFO, device or socket has no size to announce, no end to wait for and no hash to check:
    /// refused before anything touches the network (a FIFO would hang the transfer).
    static func requireRegular(_ path: String, given: String) throws(NearbyError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .ioFailure(path: given, reason: "cannot read its attributes") }
        guard info.st_mode & S_IFMT != S_IFREG else { return }
        throw .ioFailure(path: given, reason: "\(kind(info.st_mode & S_IFMT)), not a regular file: send-file sends files and directories (for a pipe, use '\(Spelling.command(.stream))')")
    }

    /// What a file that is not a regular one is, in words (send-file's refusal, the web share's 410).
    package static func kind(_ mode: mode_t) -> String {
        switch mode {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        default: "something else"
        }
    }

    static func emptyDirectory(_ path: String, relative: String) -> OutgoingFile {
        OutgoingFile(source: path, relative: relative, size: 0, modified: 0, directory: true)
    }

    /// A path given, followed if it is a symbolic link (FileManager's `attributesOfItem` did not
    /// follow it, and announced the link's own size).
    static func describe(_ path: String, relative: String) throws(NearbyError) -> OutgoingFile {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .ioFailure(path: path, reason: "cannot read its attributes") }
        return OutgoingFile(
            source: path, relative: relative, size: UInt64(clamping: info.st_size), modified: DirectoryWalk.modified(info),
            modifiedNanoseconds: DirectoryWalk.modifiedNanoseconds(info), identity: FileIdentity(info))
    }
}

extension Events.Skipped {
    package init(_ skipped: FileList.Skipped) {
        self.init(path: skipped.path, reason: skipped.reason)
    }
}
