import Foundation
import PropertyBased
import Testing
@testable import NearbyCore
@testable import NearbyTransfer

@Suite struct SafePathTests {
    /// The fuzz target http-names' first finding (scripts/fuzz in CI, docs/fuzzing.md): a name that
    /// starts with a combining mark (U+0301) after NULs and `..`. It stays in its directory — the
    /// target's check had compared with String.hasPrefix, which joins "/" and the mark into one
    /// character, so the finding was the check's; the cleaned name is checked by bytes here.
    /// Its second: `../../\u{301}etp.sstd` split by characters kept `../\u{301}etp.sstd` as one
    /// component (a "/" and the mark after it are one Character), and the placed path was
    /// /srv/\u{301}etp.sstd, outside the directory. Split by scalars now.
    @Test func aSlashJoinedToACombiningMarkStillSeparates() {
        for claimed in ["../../\u{0301}etp.sstd", "a/\u{0301}b", "..\\\u{0301}..\\x", "/\u{0301}../../etc/passwd"] {
            let parts = SafePath.components(of: claimed)
            #expect(parts == SafePath.checkedComponents(of: claimed), "\(claimed.debugDescription)")
            #expect(parts.allSatisfy { !$0.utf8.contains(UInt8(ascii: "/")) && !$0.utf8.contains(UInt8(ascii: "\\")) && $0 != ".." }, "\(parts)")
            let placed = parts.reduce(URL(fileURLWithPath: "/srv/received", isDirectory: true)) { $0.appendingPathComponent($1) }
            #expect(placed.standardizedFileURL.path.utf8.starts(with: "/srv/received/".utf8), "\(claimed.debugDescription) placed at \(placed.path)")
        }
    }

    /// Its third: invalid UTF-8 (each byte a 3-byte U+FFFD) cut to 255 bytes ended in a space,
    /// which cleaning again trimmed: cleaning twice must be cleaning once.
    @Test func aComponentCutToFitIsCleanedOnce() throws {
        let bytes = try #require(Data(base64Encoded: "IC4uIC8uANvb29vb29vb2/////////8uLiAuLiAvLwLb29vb29vb29vb29vbLi4g29vb29vb29vb29vb29vb29vb29sBAAAAAAAAFtvb29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb29vS29vb29vb29vb29vb29sK2yD/"))
        let claimed = String(decoding: bytes, as: UTF8.self)
        let once = SafePath.relative(claimed)
        #expect(SafePath.relative(once) == once)
        #expect(SafePath.components(of: claimed).allSatisfy { $0.utf8.count <= SafePath.maxComponentBytes && $0.first != " " && $0.last != " " })
    }

    @Test func aNameStartingWithACombiningMarkStaysInItsDirectory() {
        let claimed = "\0\0\0\u{0301}\u{8b}a/./b/.\0..\\..\\.!\\%sca-.!d/a/b.d-\0ta/b.txt"
        let parts = SafePath.components(of: claimed)
        #expect(parts == SafePath.checkedComponents(of: claimed))
        #expect(!parts.isEmpty && parts.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("/") && !$0.contains("\\") })
        let placed = parts.reduce(URL(fileURLWithPath: "/srv/received", isDirectory: true)) { $0.appendingPathComponent($1) }
        #expect(placed.standardizedFileURL.path.utf8.starts(with: "/srv/received/".utf8))
        #expect(SafePath.relative(SafePath.relative(claimed)) == SafePath.relative(claimed))
    }

    @Test(arguments: [
        ("report.pdf", "report.pdf"),
        ("dir/sub/file.txt", "dir/sub/file.txt"),
        ("/etc/passwd", "etc/passwd"),
        ("../../x", "x"),
        ("a/../../b", "a/b"),
        ("..\\..\\windows\\x", "windows/x"),
        ("./a/./b", "a/b"),
        ("", "unnamed"),
        ("..", "unnamed"),
        ("/", "unnamed"),
        ("evil\u{1B}[31mname\n", "evil[31mname"),
        ("...", "_..."),
        ("  spaced  /x", "spaced/x"),
    ])
    func staysInside(_ claimed: String, _ expected: String) {
        #expect(SafePath.relative(claimed) == expected)
    }

    @Test func boundsLengthAndDepth() {
        let long = String(repeating: "é", count: 300)
        #expect(SafePath.components(of: long)[0].utf8.count <= 255)
        let deep = (0..<100).map { "d\($0)" }.joined(separator: "/")
        #expect(SafePath.components(of: deep).count == SafePath.maxDepth)
    }

    /// The plain-ASCII fast path gives what the character-by-character cleaning gives.
    @Test func fastPathMatchesTheCheckedOne() async {
        let pieces = ["a", "Z", "0", ".", "..", "...", "/", "\\", " ", "  ", "\t", "\n", "\u{7F}", "~", "-", "é", "e\u{301}", "\u{202E}",
                      "\u{200B}", "😀", "\r\n", "/\u{301}", String(repeating: "x", count: 250), String(repeating: ".", count: 254)]
        await propertyCheck(count: 5000, input: Gen.element(of: pieces).compactMap { $0 }.array(of: 0...12)) { parts in
            let claimed = parts.joined()
            #expect(SafePath.components(of: claimed) == SafePath.checkedComponents(of: claimed), "\(claimed.debugDescription)")
        }
        let deep = (0..<100).map { "d\($0)" }.joined(separator: "/")
        #expect(SafePath.components(of: deep) == SafePath.checkedComponents(of: deep))
    }

    @Test func candidatesKeepTheExtension() {
        #expect(SafePath.candidate("a.txt", 0) == "a.txt")
        #expect(SafePath.candidate("a.txt", 1) == "a (1).txt")
        #expect(SafePath.candidate("archive.tar.gz", 2) == "archive.tar (2).gz")
        #expect(SafePath.candidate("README", 3) == "README (3)")
        #expect(SafePath.candidate(".hidden", 1) == ".hidden (1)")
    }

    /// A name of 252–255 bytes uploaded twice: the second fits in 255 bytes (the stem shortened, the
    /// extension kept), as does a 4,000-character name, which keeps its extension too.
    @Test func longNamesFitWithTheirExtension() {
        let long = String(repeating: "a", count: 251) + ".txt"
        #expect(long.utf8.count == 255)
        let second = SafePath.candidate(long, 1)
        #expect(second.utf8.count == 255)
        #expect(second.hasSuffix("a (1).txt"))
        let wide = String(repeating: "é", count: 126) + ".txt"
        #expect(SafePath.candidate(wide, 12).utf8.count <= 255)
        #expect(SafePath.candidate(wide, 12).hasSuffix("é (12).txt"))
        let huge = SafePath.components(of: String(repeating: "b", count: 4000) + ".pdf")
        #expect(huge.count == 1 && huge[0].utf8.count == 255 && huge[0].hasSuffix("b.pdf"))
        let noExtension = SafePath.candidate(String(repeating: "c", count: 255), 3)
        #expect(noExtension.utf8.count == 255 && noExtension.hasSuffix(" (3)"))
    }

    @Test func placingNeverOverwrites() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-place-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "old".write(toFile: dir + "/a.txt", atomically: true, encoding: .utf8)
        for round in 1...2 {
            let temporary = dir + "/.tmp\(round)"
            try "new\(round)".write(toFile: temporary, atomically: true, encoding: .utf8)
            let placed = try SafePath.placeWithoutOverwriting(temporary, in: dir, as: "a.txt")
            #expect(placed == dir + "/a (\(round)).txt")
            #expect(!FileManager.default.fileExists(atPath: temporary))
        }
        #expect(try String(contentsOfFile: dir + "/a.txt", encoding: .utf8) == "old")
    }
}

@Suite struct MoveWithoutReplacingTests {
    @Test func movesOnceAndNeverReplaces() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-move-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "new".write(toFile: dir + "/.tmp", atomically: false, encoding: .utf8)
        try "old".write(toFile: dir + "/taken", atomically: false, encoding: .utf8)
        symlink("nowhere", dir + "/dangling")
        #expect(SafePath.moveWithoutReplacing(dir + "/.tmp", to: dir + "/taken") == EEXIST)
        #expect(SafePath.moveWithoutReplacing(dir + "/.tmp", to: dir + "/dangling") == EEXIST)
        #expect(SafePath.moveWithoutReplacing(dir + "/.tmp", to: dir + "/free") == 0)
        #expect(SafePath.moveWithoutReplacing(dir + "/.tmp", to: dir + "/again") == ENOENT)
        #expect(try String(contentsOfFile: dir + "/taken", encoding: .utf8) == "old")
        #expect(try String(contentsOfFile: dir + "/free", encoding: .utf8) == "new")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/dangling") == "nowhere")
        #expect(!FileManager.default.fileExists(atPath: dir + "/.tmp"))
    }
}

@Suite struct InvisibleCharacterTests {
    @Test(arguments: [
        ("\u{202E}txt.exe", "txt.exe"),
        ("photo\u{202E}gpj.exe", "photogpj.exe"),
        ("a\u{200B}b\u{200D}c\u{FEFF}.txt", "abc.txt"),
        ("\u{2066}x\u{2069}/\u{061C}y", "x/y"),
        ("line\u{2028}break", "linebreak"),
        ("\u{202E}", "unnamed"),
    ])
    func formatCharactersAreStripped(_ claimed: String, _ expected: String) {
        #expect(SafePath.relative(claimed) == expected)
    }
}
