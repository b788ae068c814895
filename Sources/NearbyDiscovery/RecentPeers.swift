import Foundation
import SystemPackage
import NearbyBase
import NearbyIdentity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The peers this host saw (`nearby browse`) or reached (a session it opened) lately, kept in
/// `$NEARBY_HOME/recent-peers.json`: shell completion offers their names and IDs without touching
/// the network or the identity, and a command naming one of them connects to its remembered
/// addresses at once while discovery runs (`remembered`); the handshake still proves the identity,
/// so a stale or forged entry can only fail, never impersonate.
///
/// It is a cache: losing it costs nothing. A missing, unreadable or corrupt file reads as empty, and
/// writes replace the file atomically (temporary file + `rename(2)`), so a reader never sees half of one.
package struct RecentPeers: Sendable {
    /// One peer, as last seen on one service type.
    package struct Entry: Codable, Equatable, Sendable {
        package var id: String
        package var name: String?
        package var service: String
        package var lastSeen: Date
        /// Where the peer answered or was advertised, the address that worked first; with `port`,
        /// what a command tries before discovery has answered. Absent in entries of older versions.
        package var addresses: [String]?
        package var port: Int?

        package init(id: String, name: String?, service: String, lastSeen: Date, addresses: [String]? = nil, port: Int? = nil) {
            self.id = id
            self.name = name
            self.service = service
            self.lastSeen = lastSeen
            self.addresses = addresses
            self.port = port
        }

        enum CodingKeys: String, CodingKey {
            case id, name, service, addresses, port
            case lastSeen = "last_seen"
        }
    }

    private struct File: Codable {
        var version: Int
        var peers: [Entry]
    }

    static let fileVersion = 1
    /// Newest entries kept; older ones fall off.
    package static let capacity = 100
    /// A larger file is not ours (or not sane): completion must stay fast, so it reads as empty.
    static let maxFileBytes = 1 << 20
    /// How long remembered addresses are tried first: a day after the peer was last seen or reached.
    package static let addressLifetime: TimeInterval = 24 * 3600
    /// At most this many remembered addresses per peer (an entry is data from the network).
    static let maxAddresses = 8

    /// Whether addresses are remembered and tried: yes unless `NEARBY_REMEMBER=0`.
    package static func remembersAddresses(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment["NEARBY_REMEMBER"] != "0"
    }

    package let path: String
    let capacity: Int

    package init(paths: NearbyPaths, capacity: Int = RecentPeers.capacity) {
        self.init(path: paths.recentPeersFile, capacity: capacity)
    }

    package init(path: String, capacity: Int = RecentPeers.capacity) {
        self.path = path
        self.capacity = max(1, capacity)
    }

    /// The entries, newest first; empty when there is no usable file.
    package func load() -> [Entry] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: Self.maxFileBytes + 1), data.count <= Self.maxFileBytes,
            let file = try? Self.decoder.decode(File.self, from: data), file.version == Self.fileVersion
        else { return [] }
        return file.peers.sorted(by: Self.newestFirst)
    }

    /// The service types recent peers were seen on, the most recently seen first, each once.
    package func services() -> [String] {
        var seen = Set<String>()
        return load().map(\.service).filter { seen.insert($0).inserted }
    }

    /// Adds or refreshes entries (one per service and ID), keeps the newest `capacity`, and replaces
    /// the file atomically. Two writers racing lose at most each other's newest entries.
    /// An entry that says again, within this time, what the file already says (same name,
    /// addresses and port) is not written: a peer reached again and again (a script's commands, one
    /// after another) costs no file to create and rename each time — the write was a tenth of a
    /// session's CPU time. A day's `addressLifetime` does not notice a minute.
    static let refreshInterval: TimeInterval = 60

    package func record(_ entries: [Entry]) throws {
        let loaded = load()
        let current = Dictionary(loaded.map { (Self.key(service: $0.service, id: $0.id), $0) }, uniquingKeysWith: { first, _ in first })
        let news = entries.contains { entry in
            guard let known = current[Self.key(service: entry.service, id: entry.id)] else { return true }
            let age = entry.lastSeen.timeIntervalSince(known.lastSeen)
            return known.name != entry.name || (entry.addresses ?? known.addresses) != known.addresses
                || (entry.port ?? known.port) != known.port || age >= Self.refreshInterval
        }
        guard news else { return }
        var merged: [String: Entry] = [:]
        for var entry in loaded + entries {
            let key = Self.key(service: entry.service, id: entry.id)
            if let existing = merged[key] {
                if existing.lastSeen > entry.lastSeen { continue }
                // A sighting without addresses keeps those an earlier one remembered.
                if entry.addresses == nil, entry.port == nil { (entry.addresses, entry.port) = (existing.addresses, existing.port) }
            }
            merged[key] = entry
        }
        let newest = merged.values.sorted(by: Self.newestFirst)
        try write(File(version: Self.fileVersion, peers: Array(newest.prefix(capacity))))
    }

    /// Records a peer `nearby browse` found, at most once per peer and file in this process, and
    /// never our own advertisement. Failures are ignored: browsing must not suffer for a cache.
    package func recordOnce(_ peer: DiscoveredPeer, service: ServiceType, selfID: PeerID?, now: Date = Date()) {
        guard peer.instance != selfID?.rawValue,
            Self.recorded.withLock({ $0.insert(path + "\n" + Self.key(service: service.name, id: peer.instance)).inserted })
        else { return }
        let remember = Self.remembersAddresses() && peer.port != nil && !peer.addresses.isEmpty
        try? record([Entry(
            id: peer.instance, name: peer.txt.displayName, service: service.name, lastSeen: now,
            addresses: remember ? Self.ordered(peer.addresses) : nil, port: remember ? peer.port : nil)])
    }

    /// The entry `query` names on `service` — its exact ID, else the only entry whose ID begins with
    /// it or whose name it is — when that entry has addresses seen within `addressLifetime`. A name
    /// two remembered peers share names neither: discovery decides, with its ambiguity rule.
    package func remembered(_ query: String, service: String, excluding me: String?, now: Date = Date()) -> Entry? {
        guard !query.isEmpty else { return nil }
        let entries = load().filter { $0.service == service && $0.id != me }
        let named = entries.first { $0.id == query }.map { [$0] }
            ?? entries.filter { PeerQuery.matches(query, id: $0.id, name: $0.name) }
        guard named.count == 1, let entry = named.first, let addresses = entry.addresses, !addresses.isEmpty,
              let port = entry.port, (1...65535).contains(port),
              now.timeIntervalSince(entry.lastSeen) < Self.addressLifetime
        else { return nil }
        return entry
    }

    /// Forgets where a peer was (it answered with another identity, or not at all); the entry stays
    /// for completion.
    package func forgetAddresses(id: String, service: String) throws {
        var entries = load()
        guard let index = entries.firstIndex(where: { $0.id == id && $0.service == service }), entries[index].addresses != nil else { return }
        (entries[index].addresses, entries[index].port) = (nil, nil)
        try write(File(version: Self.fileVersion, peers: entries))
    }

    /// In `PeerAddresses.connectionOrder`, each once, at most `maxAddresses`.
    package static func ordered(_ addresses: [String]) -> [String] {
        var seen = Set<String>()
        return Array(PeerAddresses.connectionOrder(addresses.filter { seen.insert($0).inserted }).prefix(maxAddresses))
    }

    /// What completion offers for a PEER on `service` (every service when nil): IDs and display
    /// names, newest first, without duplicates. Names a shell word cannot carry sensibly (control
    /// characters, a leading `-` that would read as an option) are left out; they come from the
    /// network and are untrusted.
    package func candidates(service: String?) -> [String] {
        var seen = Set<String>()
        var words: [String] = []
        for entry in load() where service == nil || entry.service == service {
            for word in [entry.name, entry.id].compactMap(\.self) where Self.isOfferable(word) {
                if seen.insert(word).inserted { words.append(word) }
            }
        }
        return words
    }

    static func isOfferable(_ word: String) -> Bool {
        !word.isEmpty && !word.hasPrefix("-")
            && !word.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Newest first; ties in a stable order, so the file and the candidates are the same every time.
    private static func newestFirst(_ a: Entry, _ b: Entry) -> Bool {
        if a.lastSeen != b.lastSeen { return a.lastSeen > b.lastSeen }
        return (a.service, a.id) < (b.service, b.id)
    }

    private static func key(service: String, id: String) -> String { service + "/" + id }

    /// Which peers this process has recorded already, so a peer that comes and goes is written once.
    private static let recorded = Locked<Set<String>>([])

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private func write(_ file: File) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(file) + Data("\n".utf8)
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // No fsync: after a crash a cache may come back empty, and browsing should not wait for the disk.
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            let fd = try FileDescriptor.open(
                FilePath(temporary), .writeOnly, options: [.create, .exclusiveCreate], permissions: [.ownerReadWrite])
            try fd.closeAfter { _ = try fd.writeAll(data) }
        } catch {
            _ = unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let error = Errno(rawValue: errno)
            _ = unlink(temporary)
            throw error
        }
    }
}

/// The order in which a peer's addresses are tried, by every connection and every check: IPv4
/// first, then IPv6, link-local last (it needs its interface, and works only on that link).
package enum PeerAddresses {
    package static func connectionOrder(_ addresses: [String]) -> [String] {
        let linkLocal = { (address: String) in Subnets.isLinkLocal(address) }
        return addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") && !linkLocal($0) } + addresses.filter(linkLocal)
    }
}
