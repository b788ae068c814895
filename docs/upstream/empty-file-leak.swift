// Data(contentsOf:) of a 0-byte file leaks 4 KiB a read on Linux (swift-foundation,
// FoundationEssentials/Data/Data+Reading.swift: the buffer malloc'ed for a file whose st_size is 0
// is not freed when nothing was read).
//   swiftc -sanitize=address empty-file-leak.swift -o /tmp/leak && /tmp/leak
// LeakSanitizer: "40960 byte(s) leaked in 10 allocation(s)"; a 1-byte file: no report.
import Foundation

let path = "/tmp/empty-file-leak-\(getpid())"
FileManager.default.createFile(atPath: path, contents: Data())
defer { try? FileManager.default.removeItem(atPath: path) }
for _ in 0..<10 {
    _ = try? Data(contentsOf: URL(fileURLWithPath: path))
}
