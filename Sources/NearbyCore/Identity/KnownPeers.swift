import Foundation
import Synchronization

/// Peers pinned by full public key on first contact (`known_peers` beside the identity): one line per
/// peer, `<id> <base64 SPKI DER> <name>`. A known ID that shows up with another key is refused.
public final class KnownPeers: Sendable {
    public let path: String
    private let lock = Mutex<Void>(())

    public init(paths: NearbyPaths) { path = paths.home + "/known_peers" }

    public enum Verdict: Equatable, Sendable { case known, new, changed }

    /// Checks `key` for `id`, pinning it when the peer is new.
    public func check(id: PeerID, key: Data, name: String) throws(NearbyError) -> Verdict {
        let encoded = key.base64EncodedString()
        return try lock.withLock { _ throws(NearbyError) -> Verdict in
            let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            for line in existing.split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 2)
                guard fields.count >= 2, fields[0] == id.rawValue else { continue }
                return fields[1] == encoded ? .known : .changed
            }
            let safeName = name.replacingOccurrences(of: "\n", with: " ")
            let entry = "\(id.rawValue) \(encoded) \(safeName)\n"
            guard let handle = FileHandle(forWritingAtPath: path) ?? createFile() else {
                throw .ioFailure(path: path, reason: "cannot write known peers")
            }
            defer { try? handle.close() }
            do {
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(entry.utf8))
            } catch {
                throw .ioFailure(path: path, reason: "\(error)")
            }
            return .new
        }
    }

    private func createFile() -> FileHandle? {
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            return nil
        }
        return FileHandle(forWritingAtPath: path)
    }
}
