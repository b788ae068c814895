import Foundation
@testable import NearbyDNS
@testable import NearbyIdentity
@testable import NearbyLocalSend

/// The files nearby reads back, which another program (or a person) may have written: the identity,
/// the pinned peers, LocalSend's certificate, a TSIG key file (`--tsig-key`).
enum FileTargets {
    static let all = [
        FuzzTarget(name: "files-identity", run: identity),
        FuzzTarget(name: "files-known-peers", run: knownPeers),
        FuzzTarget(name: "files-tsig-key", run: tsigKey),
    ]

    /// A home of this process's own, in memory where there is one (/dev/shm), made once.
    static let home: NearbyPaths = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let home = base + "/nearby-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return NearbyPaths(home: home)
    }()

    static func write(_ input: [UInt8], to path: String) {
        guard FileManager.default.createFile(atPath: path, contents: Data(input)) else {
            Fuzz.violated("cannot write \(path)")
        }
    }

    /// identity.json as nearby reads it at every start; the PEM reader of LocalSend's certificate.
    static func identity(_ input: [UInt8]) {
        write(input, to: home.identityFile)
        _ = try? IdentityStore(paths: home).load()
        _ = LocalSendIdentity.der(ofPEM: Fuzz.text(input))
    }

    /// known_peers (and its .auto): read as the pins, looked up by ID and name.
    static func knownPeers(_ input: [UInt8]) {
        let (pins, strangers) = Fuzz.split(input, at: 0)
        let peers = KnownPeers(paths: home)
        write(pins, to: peers.path)
        write(strangers, to: peers.autoPath)
        let key = Data(repeating: 1, count: 91)
        let id = PeerID(publicKeyDER: key)
        _ = try? peers.verify(id: id, key: key)
        _ = peers.names("laptop")
        for line in Fuzz.text(pins).split(separator: "\n").prefix(64) {
            if let pin = KnownPeers.parse(line), let parsed = PeerID(pin.0) {
                _ = try? peers.verify(id: parsed, key: key)
            }
        }
    }

    /// A key file as `tsig-keygen` writes it.
    static func tsigKey(_ input: [UInt8]) {
        _ = try? TSIGKey.parse(keyFile: Fuzz.text(input))
    }
}
