import Crypto
import Foundation
import SystemPackage
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where nearby keeps its files: `$NEARBY_HOME`, else `$XDG_CONFIG_HOME/nearby`, else `~/.config/nearby`.
package struct NearbyPaths: Sendable {
    package let home: String

    package init(home: String) { self.home = home }

    package init(environment: [String: String]) {
        if let home = environment["NEARBY_HOME"], !home.isEmpty {
            self.home = home
        } else if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty {
            self.home = xdg + "/nearby"
        } else {
            let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            self.home = user + "/.config/nearby"
        }
    }

    package var identityFile: String { home + "/identity.json" }
    /// Peers `nearby browse` found lately, for shell completion (`RecentPeers`).
    package var recentPeersFile: String { home + "/recent-peers.json" }
    /// The directories strangers made in a node's save directory, per service (`PartialFiles`).
    package func strangersDirectories(service: String) -> String { home + "/strangers-directories-\(service).tsv" }
}

/// Loads the identity, creating it once on first use. Creation is atomic and safe when two first runs
/// race: each writes a complete private temporary file and `link(2)`s it to the final name, which
/// succeeds for exactly one of them; the loser reads the winner's identity.
package struct IdentityStore: Sendable {
    package let paths: NearbyPaths
    static let fileVersion = 1

    package init(paths: NearbyPaths) { self.paths = paths }

    package var path: String { paths.identityFile }

    /// The existing identity, or nil when there is none yet.
    package func load() throws(NearbyError) -> Identity? {
        guard let data = try Self.read(path) else { return nil }
        return try decode(data)
    }

    /// An identity file's bytes, nil when there is none yet; any other failure is `identityIO`.
    /// (The LocalSend identity beside it is read the same way.) Read through a descriptor, not
    /// `Data(contentsOf:)`: FoundationEssentials on Linux reads a file of 0 bytes into a 4 KiB buffer
    /// it never frees (docs/fuzzing.md, "Findings"), and identity.json of 0 bytes is what a full
    /// disk or a crash in the middle of someone's editor leaves.
    package static func read(_ path: String) throws(NearbyError) -> Data? {
        let fd: FileDescriptor
        do {
            // Non-blocking: a FIFO put there opens at once (and is refused below) instead of hanging.
            fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec, .nonBlocking])
        } catch Errno.noSuchFileOrDirectory {
            return nil
        } catch {
            throw .identityIO(path: path, reason: "\(error)")
        }
        do {
            return try fd.closeAfter { () throws(NearbyError) -> Data in try readAll(fd, path: path) }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .identityIO(path: path, reason: "\(error)")
        }
    }

    /// The whole regular file behind `fd`, read to its end (at most `maxFileBytes`).
    private static func readAll(_ fd: FileDescriptor, path: String) throws(NearbyError) -> Data {
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { throw .identityIO(path: path, reason: Errno(rawValue: errno).description) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .identityIO(path: path, reason: "not a regular file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count: Int
            do { count = try chunk.withUnsafeMutableBytes { try fd.read(into: $0, retryOnInterrupt: true) } } catch {
                throw .identityIO(path: path, reason: "\(error)")
            }
            if count == 0 { return Data(bytes) }
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= maxFileBytes else {
                throw .identityCorrupt(path: path, reason: "over \(maxFileBytes >> 10) KiB, not an identity file")
            }
        }
    }

    /// An identity file is about 400 bytes (LocalSend's certificate and key about 2 KiB).
    static let maxFileBytes = 1 << 20

    package func loadOrCreate(defaultName: @autoclosure () -> String) throws(NearbyError) -> Identity {
        try loadOrCreate(namedAfter: { _ in defaultName() })
    }

    /// As `loadOrCreate(defaultName:)`, with a default name made from the new peer ID.
    package func loadOrCreate(namedAfter defaultName: (PeerID) -> String) throws(NearbyError) -> Identity {
        if let identity = try load() { return identity }
        let key = P256.Signing.PrivateKey()
        let identity = Identity(privateKey: key, displayName: defaultName(PeerID(publicKeyDER: key.publicKey.derRepresentation)))
        try createDirectory()
        let temporary = try writeTemporary(identity)
        defer { _ = unlink(temporary) }
        if link(temporary, path) != 0 {
            let err = errno
            guard err == EEXIST else { throw .identityIO(path: path, reason: Errno(rawValue: err).description) }
        }
        // Whoever won the race, the file on disk is now the identity.
        guard let stored = try load() else { throw .identityIO(path: path, reason: "it vanished right after creation") }
        return stored
    }

    /// Changes the display name; the key, and so the peer ID, never change.
    package func rename(to name: String) throws(NearbyError) -> Identity {
        try DisplayName.validate(name)
        var identity = try loadOrCreate(defaultName: name)
        identity.displayName = name
        let temporary = try writeTemporary(identity)
        if Foundation.rename(temporary, path) != 0 {
            let err = errno
            _ = unlink(temporary)
            throw .identityIO(path: path, reason: Errno(rawValue: err).description)
        }
        return identity
    }

    func decode(_ data: Data) throws(NearbyError) -> Identity {
        let file: IdentityFile
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            file = try decoder.decode(IdentityFile.self, from: data)
        } catch {
            throw .identityCorrupt(path: path, reason: "not a valid identity JSON document")
        }
        guard file.version == Self.fileVersion else {
            throw .identityCorrupt(path: path, reason: "unsupported version \(file.version)")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: file.privateKey)
        } catch {
            throw .identityCorrupt(path: path, reason: "the private key cannot be read")
        }
        do {
            try DisplayName.validate(file.name)
        } catch {
            throw .identityCorrupt(path: path, reason: "the display name is invalid")
        }
        let identity = Identity(privateKey: key, displayName: file.name, created: file.created)
        guard identity.peerID.rawValue == file.id else {
            throw .identityCorrupt(path: path, reason: "the stored id \(file.id) does not match the key (\(identity.peerID))")
        }
        return identity
    }

    private func createDirectory() throws(NearbyError) {
        do {
            try FileManager.default.createDirectory(
                atPath: paths.home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .identityIO(path: path, reason: "cannot create \(paths.home): \(error.localizedDescription)")
        }
    }

    /// Writes the identity to a new file beside the final one (mode 0600 from the start, fsynced).
    private func writeTemporary(_ identity: Identity) throws(NearbyError) -> String {
        let file = IdentityFile(
            version: Self.fileVersion, id: identity.peerID.rawValue, name: identity.displayName,
            privateKey: identity.privateKey.pemRepresentation, created: identity.created)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data: Data
        do { data = try encoder.encode(file) + Data("\n".utf8) } catch {
            throw .identityIO(path: path, reason: "cannot encode: \(ErrorWords.describe(error))")
        }
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            let fd = try FileDescriptor.open(
                FilePath(temporary), .writeOnly, options: [.create, .exclusiveCreate],
                permissions: [.ownerReadWrite])
            try fd.closeAfter {
                _ = try fd.writeAll(data)
                guard fsync(fd.rawValue) == 0 else { throw Errno(rawValue: errno) }
            }
        } catch {
            _ = unlink(temporary)
            throw .identityIO(path: temporary, reason: "\(error)")
        }
        return temporary
    }
}
