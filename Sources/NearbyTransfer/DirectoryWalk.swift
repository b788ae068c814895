#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything under a directory, each entry with one `fstatat` (no symbolic link followed): what
/// `FileList` sends of a directory. FileManager's enumerator plus `attributesOfItem` cost about six
/// `stat` calls and a `listxattr` per file, a noticeable share of a folder of small files' CPU.
///
/// It lists what that enumerator listed (an `fts` walk, `FTS_PHYSICAL | FTS_XDEV`): hidden entries
/// too; directories are entered but for symbolic links, directories on another file system (listed,
/// not entered) and a directory that is its own ancestor (left out); a directory that cannot be
/// read is listed and not entered. The order is not the enumerator's: `FileList` sorts.
enum DirectoryWalk {
    struct Entry {
        /// Below the directory walked, `/`-separated.
        var relative: String
        /// Its `lstat`, nil when it could not be had (or its name is not UTF-8, which FileManager
        /// gave as a repaired string that no longer named it).
        var info: stat?
        /// A directory that was read and held nothing.
        var isEmptyDirectory = false
    }

    /// Nil when the directory itself cannot be read.
    static func entries(of root: String) -> [Entry]? {
        var rootInfo = stat()
        guard stat(root, &rootInfo) == 0 else { return nil }
        var entries: [Entry] = []
        // Directories still to read: full path, relative path, its entry's index, and the (device,
        // inode) of it and its ancestors, to leave out a directory that loops back.
        var pending: [(full: String, relative: String, index: Int?, ancestors: [FileIdentity])] = [
            (full: root, relative: "", index: nil, ancestors: [FileIdentity(rootInfo)]),
        ]
        while let next = pending.popLast() {
            guard let directory = opendir(next.full) else {
                if next.index == nil { return nil }
                continue
            }
            let fd = dirfd(directory)
            var count = 0
            while let item = readdir(directory) {
                guard let (name, isUTF8) = Self.name(item) else { continue }
                count += 1
                let relative = next.relative.isEmpty ? name : next.relative + "/" + name
                var info = stat()
                guard isUTF8, fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                    entries.append(Entry(relative: relative, info: nil))
                    continue
                }
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    entries.append(Entry(relative: relative, info: info))
                    continue
                }
                let identity = FileIdentity(info)
                if next.ancestors.contains(identity) { continue }
                entries.append(Entry(relative: relative, info: info))
                let full = next.full + "/" + name
                if info.st_dev == rootInfo.st_dev {
                    pending.append((full: full, relative: relative, index: entries.count - 1, ancestors: next.ancestors + [identity]))
                } else {
                    entries[entries.count - 1].isEmptyDirectory = isEmpty(full)
                }
            }
            closedir(directory)
            if count == 0, let index = next.index { entries[index].isEmptyDirectory = true }
        }
        return entries
    }

    /// An entry's name (nil for `.` and `..`), repaired where it is not UTF-8 (as FileManager
    /// repairs it), and whether it was.
    private static func name(_ item: UnsafeMutablePointer<dirent>) -> (String, Bool)? {
        withUnsafeBytes(of: &item.pointee.d_name) { raw -> (String, Bool)? in
            let bytes = raw.prefix { $0 != 0 }
            if bytes.elementsEqual([UInt8(ascii: ".")]) || bytes.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) { return nil }
            let name = String(decoding: bytes, as: UTF8.self)
            return (name, name.utf8.elementsEqual(bytes))
        }
    }

    /// A directory that can be read and holds nothing.
    private static func isEmpty(_ path: String) -> Bool {
        guard let directory = opendir(path) else { return false }
        defer { closedir(directory) }
        while let item = readdir(directory) {
            if Self.name(item) != nil { return false }
        }
        return true
    }

    /// The modification time in nanoseconds since 1970; nil for a time before it.
    static func modifiedNanoseconds(_ info: stat) -> UInt64? {
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        guard time.tv_sec >= 0, time.tv_nsec >= 0, time.tv_nsec < 1_000_000_000 else { return nil }
        let (high, overflow) = UInt64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? nil : high + UInt64(time.tv_nsec)
    }

    /// The seconds since 1970 FileManager gives for a modification time, to the last bit: it goes
    /// through `Date`'s reference date (2001), and the transfer key depends on the value.
    static func modified(_ info: stat) -> Double {
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        let sinceReferenceDate = Double(time.tv_sec) - 978_307_200 + Double(time.tv_nsec) / 1_000_000_000.0
        return sinceReferenceDate + 978_307_200
    }
}
