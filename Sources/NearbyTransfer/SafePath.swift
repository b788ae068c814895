import Foundation

import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns a path a peer sent into one that stays inside the save directory, whatever it claims:
/// no absolute paths, no `..`, no empty or `.` components, no control characters, no invisible
/// format characters (bidi overrides such as U+202E, zero-width spaces: Unicode category Cf, which
/// make `‮txt.exe` look like `exe.txt`), no backslash tricks, each component at most 255 bytes, at
/// most 32 levels deep.
package enum SafePath {
    package static let maxDepth = 32
    package static let maxComponentBytes = 255

    /// The relative components to use, never empty.
    package static func components(of claimed: String) -> [String] {
        var claimed = claimed
        guard let parts = claimed.withUTF8(plainComponents) else { return checkedComponents(of: claimed) }
        return bounded(parts)
    }

    /// The common case without decoding a character: every component printable ASCII, not
    /// starting or ending with a space, of at most `maxComponentBytes`, not made only of dots but
    /// `.` and `..` (dropped). Nil for anything else, which `checkedComponents` cleans: the same
    /// result (`SafePathTests` compares both).
    private static func plainComponents(_ bytes: UnsafeBufferPointer<UInt8>) -> [String]? {
        var parts: [String] = []
        var start = 0
        var onlyDots = true
        for index in 0...bytes.count {
            let byte = index < bytes.count ? bytes[index] : UInt8(ascii: "/")
            guard byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") else {
                guard byte >= 0x20, byte < 0x7F else { return nil }
                if byte != UInt8(ascii: ".") { onlyDots = false }
                continue
            }
            let count = index - start
            if count > 0 {
                guard bytes[start] != 0x20, bytes[index - 1] != 0x20, count <= maxComponentBytes, !onlyDots || count <= 2 else { return nil }
                if !onlyDots { parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
            }
            start = index + 1
            onlyDots = true
        }
        return parts
    }

    private static func bounded(_ parts: [String]) -> [String] {
        if parts.count > maxDepth { return Array(parts.suffix(maxDepth)) }
        return parts.isEmpty ? ["unnamed"] : parts
    }

    /// Any claimed path, scalar by scalar: split on every `/` and `\\` scalar, not on characters
    /// (a `/` followed by a combining mark, U+0301, is one Character that is not "/": split by
    /// characters, `../../\u{301}x` kept a component holding `/` and left the directory; the fuzz
    /// target http-names found it).
    static func checkedComponents(of claimed: String) -> [String] {
        let raw = claimed.unicodeScalars.split(whereSeparator: { $0 == "/" || $0 == "\\" })
        var parts: [String] = []
        for piece in raw {
            var clean = String(String.UnicodeScalarView(piece.filter(TerminalText.isShowable)))
            clean = clean.trimmingCharacters(in: .whitespaces)
            // Cut to fit before the checks: a cut can end in a space, which cleaning again would
            // trim (http-names' third finding: cleaning twice must be cleaning once).
            if clean.utf8.count > maxComponentBytes { clean = fitting(clean).trimmingCharacters(in: .whitespaces) }
            guard !clean.isEmpty, clean != ".", clean != ".." else { continue }
            // A name made only of dots (`...`) is legal but confusing next to `..`: keep it visible.
            if clean.allSatisfy({ $0 == "." }) { clean = "_" + clean }
            if clean.utf8.count > maxComponentBytes { clean = fitting(clean) }
            parts.append(clean)
        }
        return bounded(parts)
    }

    /// The relative path, joined with `/`.
    package static func relative(_ claimed: String) -> String { components(of: claimed).joined(separator: "/") }

    /// `name.ext`, then `name (1).ext`, `name (2).ext` …: the n-th candidate for a final name,
    /// within `maxComponentBytes` (the stem shortened, the extension kept).
    package static func candidate(_ name: String, _ n: Int) -> String {
        guard n > 0 else { return name }
        return fitting(name, suffix: " (\(n))")
    }

    /// `name` with `suffix` before its extension, in at most `limit` UTF-8 bytes: the stem is
    /// shortened (whole characters), the extension kept — unless it is too long to be one (over 32
    /// bytes), when the whole name is the stem.
    package static func fitting(_ name: String, suffix: String = "", limit: Int = maxComponentBytes) -> String {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        var stem = dot.map { String(name[..<$0]) } ?? name
        var ext = dot.map { String(name[$0...]) } ?? ""
        if ext.utf8.count > 32 {
            stem = name
            ext = ""
        }
        while !stem.isEmpty, stem.utf8.count + suffix.utf8.count + ext.utf8.count > limit { stem.removeLast() }
        return (stem + suffix + ext).cut(toUTF8Bytes: limit)
    }

    /// Moves `temporary` to the first free candidate name in `directory` without ever replacing a
    /// file: the move fails when the name exists, then the next candidate is tried.
    package static func placeWithoutOverwriting(_ temporary: String, in directory: String, as name: String) throws(NearbyError) -> String {
        for n in 0..<10_000 {
            let destination = directory + "/" + candidate(name, n)
            let error = moveWithoutReplacing(temporary, to: destination)
            if error == 0 { return destination }
            guard error == EEXIST else {
                throw .ioFailure(path: destination, reason: String(cString: strerror(error)))
            }
        }
        throw .ioFailure(path: directory + "/" + name, reason: "10 000 files of that name already exist")
    }

    /// One system call where the system has it (Linux `renameat2` with `RENAME_NOREPLACE`, macOS
    /// `renamex_np` with `RENAME_EXCL`), else `link(2)` then `unlink(2)` (a file system without
    /// the flag answers EINVAL or ENOTSUP, an old kernel ENOSYS): 0, or the errno.
    static func moveWithoutReplacing(_ source: String, to destination: String) -> Int32 {
        #if canImport(Glibc)
        if let renameat2 = Renaming.renameat2 {
            if renameat2(AT_FDCWD, source, AT_FDCWD, destination, Renaming.noReplace) == 0 { return 0 }
            let error = errno
            guard error == EINVAL || error == ENOSYS || error == ENOTSUP else { return error }
        }
        #elseif canImport(Darwin)
        if renamex_np(source, destination, UInt32(RENAME_EXCL)) == 0 { return 0 }
        let error = errno
        guard error == EINVAL || error == ENOTSUP else { return error }
        #endif
        guard link(source, destination) == 0 else { return errno }
        unlink(source)
        return 0
    }
}

#if canImport(Glibc)
/// glibc declares `renameat2` only under `_GNU_SOURCE`, which Swift's Glibc module does not set:
/// looked up once by name (glibc 2.28 and later have it).
private enum Renaming {
    typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32
    static let renameat2: RenameAt2? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2").map { unsafeBitCast($0, to: RenameAt2.self) }
    /// `RENAME_NOREPLACE` of linux/fs.h.
    static let noReplace: UInt32 = 1
}
#endif
