import NearbyBase
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file `send-file --web` listed, opened when a browser asks for it: only the file that was listed,
/// whatever is at its path by then. Anyone who can write in the shared folder may swap a file for a
/// symbolic link (to /etc/passwd), a directory for a link to another one, or a file for a FIFO (whose
/// `open` blocks until a writer comes): each is opened once, not following a link in its last part
/// and not waiting (`O_NOFOLLOW | O_NONBLOCK`), and kept only when it is a regular file with the device
/// and inode it was listed with — which also catches a link anywhere above it.
enum ListedFile {
    /// Why a listed file is not served, in words for the `skipped` event and the browser.
    enum Refusal: Error, Equatable, Sendable {
        case gone
        case link
        case notRegular(String)
        case replaced
        case unreadable(String)

        var words: String {
            switch self {
            case .gone: "it is no longer there"
            case .link: "it was replaced by a symbolic link since it was shared"
            case let .notRegular(kind): "it was replaced by \(kind) since it was shared, not a regular file"
            case .replaced: "it was replaced by another file since it was shared"
            case let .unreadable(reason): "it cannot be read (\(reason))"
            }
        }
    }

    /// Whether a file found with `mode` and `identity` is the one listed as `listed`. Pure.
    static func check(mode: mode_t, identity: FileIdentity, listed: FileIdentity?) -> Refusal? {
        switch mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: return .link
        case let other: return .notRegular(FileList.kind(other))
        }
        guard let listed, listed == identity else { return .replaced }
        return nil
    }

    /// What `open` failing with `error` means for a listed file. Pure.
    static func refusal(errno error: Int32) -> Refusal {
        switch error {
        case ENOENT, ENOTDIR: .gone
        case ELOOP: .link
        default: .unreadable(Transfer.errorText(error))
        }
    }

    /// Whether the file at `file.source` is still the one listed, without opening it (`lstat`): the
    /// entries of a zip are checked before its length is announced.
    static func stillListed(_ file: OutgoingFile) -> Refusal? {
        var info = stat()
        guard lstat(file.source, &info) == 0 else { return refusal(errno: errno) }
        return check(mode: info.st_mode, identity: FileIdentity(info), listed: file.identity)
    }

    /// `file` opened for reading on the core's `Blocking` pool, or why not (the descriptor closed then).
    static func open(_ file: OutgoingFile) async -> Result<Int32, Refusal> {
        let source = file.source, listed = file.identity
        let opened = try? await Blocking.run { _ -> Result<Int32, Refusal> in
            let fd = openListed(source)
            guard fd >= 0 else { return .failure(refusal(errno: errno)) }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let error = errno
                close(fd)
                return .failure(.unreadable(Transfer.errorText(error)))
            }
            if let refused = check(mode: info.st_mode, identity: FileIdentity(info), listed: listed) {
                close(fd)
                return .failure(refused)
            }
            return .success(fd)
        }
        return opened ?? .failure(.unreadable("the node is stopping"))
    }
}

/// `open(2)` for reading, not following a link in the last part, not waiting (a FIFO).
private func openListed(_ path: String) -> Int32 {
    open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
}
