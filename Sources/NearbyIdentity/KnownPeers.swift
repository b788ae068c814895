import Foundation
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peers pinned by full public key, in two files beside the identity, one line per peer,
/// `<id> <base64 SPKI DER> <name>`. A known ID that shows up with another key is refused.
///
/// - `known_peers`: the peers this node chose — accepted with `nearby accept`, named by
///   `--accept-from`, or reached by its own invitations. Never evicted. Fails closed: a file that
///   cannot be read, is not valid UTF-8 or has a line that is not a pin refuses every connection
///   (the error names the file) rather than meaning "no pins". A file over `maxBytes` (about 65 000
///   pins) does not lock anyone out: its first `maxBytes` are read, and an error in the log says the
///   pins after them are not checked.
/// - `known_peers.auto`: strangers that `--auto-accept` (or `stream --listen` without `--from`)
///   let in, at most `autoCap` of them, the least recently seen evicted first (docs/security.md).
///   A log, compacted when it reaches twice the cap: the last line for an ID is its latest use.
///   It cannot lock anyone out: lines that are not pins are skipped, and only its last part is read.
///
/// The handshake only checks (`verify`); a peer is pinned (`pin`) once it reached a session. Pins are
/// appended with `O_APPEND|O_NOFOLLOW`; `known_peers` is never re-created. The parsed pins are kept
/// in memory and updated with each pin: the file is read again only when its inode, size or
/// modification time change under us (a user removed a line).
package final class KnownPeers: Sendable {
    package let path: String
    package var autoPath: String { path + ".auto" }
    /// How much of `known_peers` is read (a pin line is under 250 bytes).
    package static let maxBytes = 16 << 20
    /// How many strangers `known_peers.auto` keeps (`NEARBY_AUTO_PIN_CAP`).
    package static let defaultAutoCap = 1000
    package let autoCap: Int

    struct Pin {
        var key: String
        var name: String
        /// Strangers only: when it was last pinned or seen again (larger is later).
        var used = 0
    }

    struct State {
        /// `known_peers` as last read or written by us.
        var stamp: FileStamp?
        var pins: [String: Pin] = [:]
        /// `known_peers.auto`, read once, then kept by us.
        var strangers: [String: Pin]?
        var clock = 0
        var autoLines = 0
        /// The strangers' file could not be written: said once as an error, then in the log.
        var autoFailed = false
    }
    let state = Locked(State())

    package init(paths: NearbyPaths, autoCap: Int = KnownPeers.defaultAutoCap) {
        path = paths.home + "/known_peers"
        self.autoCap = max(1, autoCap)
    }

    package enum Verdict: Equatable, Sendable { case known, new, changed }

    /// Checks `key` for `id` against the pins, without pinning anything.
    package func verify(id: PeerID, key: Data) throws(NearbyError) -> Verdict {
        let encoded = key.base64EncodedString()
        return try state.withLock { state throws(NearbyError) -> Verdict in
            try refresh(&state)
            if let pinned = state.pins[id.rawValue] { return pinned.key == encoded ? .known : .changed }
            if let pinned = strangers(&state)[id.rawValue] { return pinned.key == encoded ? .known : .changed }
            return .new
        }
    }

    /// Pins `key` for `id` when the peer is new; `.changed` when another key is pinned for it.
    /// A `stranger` (let in by `--auto-accept`) goes to the capped list; anyone else to `known_peers`,
    /// taking a stranger's pin there when it was one.
    package func pin(id: PeerID, key: Data, name: String, stranger: Bool = false) throws(NearbyError) -> Verdict {
        let encoded = key.base64EncodedString()
        let line = "\(id.rawValue) \(encoded) \(Self.safe(name))\n"
        return try state.withLock { state throws(NearbyError) -> Verdict in
            try refresh(&state)
            if let pinned = state.pins[id.rawValue] { return pinned.key == encoded ? .known : .changed }
            let earlier = strangers(&state)[id.rawValue]
            if let earlier, earlier.key != encoded { return .changed }
            if stranger {
                remember(id.rawValue, Pin(key: encoded, name: name), line: line, in: &state)
            } else {
                try append(line, to: path, stamp: &state.stamp)
                state.pins[id.rawValue] = Pin(key: encoded, name: name)
                state.strangers?[id.rawValue] = nil
            }
            return earlier == nil ? .new : .known
        }
    }

    /// Whether `id` is pinned in `known_peers` (a peer you chose), not only among the strangers.
    package func chosen(_ id: PeerID) -> Bool { state.withLock { $0.pins[id.rawValue] != nil } }

    /// Backwards-compatible check-and-pin, for callers that pin on first contact.
    package func check(id: PeerID, key: Data, name: String) throws(NearbyError) -> Verdict {
        try pin(id: id, key: key, name: name)
    }

    /// Whether `query` names a pinned peer: an ID it is a prefix of, or a name (`nearby accept`
    /// never takes it for an invitation ID, which the inviter chooses).
    package func names(_ query: String) -> Bool {
        guard !query.isEmpty else { return false }
        return state.withLock { state in
            try? refresh(&state)
            let all = [state.pins, strangers(&state)]
            return all.contains { pins in pins.contains { $0.key.hasPrefix(query) || $0.value.name == query } }
        }
    }

    /// The file whose line pins `id`: where a user removes it when the peer really has a new key.
    package func file(pinning id: PeerID) -> String {
        state.withLock { state in
            state.pins[id.rawValue] == nil && strangers(&state)[id.rawValue] != nil ? autoPath : path
        }
    }

    /// How many strangers are pinned now (tests, docs).
    package var strangerCount: Int { state.withLock { strangers(&$0).count } }

    // MARK: Strangers

    /// A stranger pinned or seen again: it becomes the most recent; over the cap, the least
    /// recent goes. The file is only a record: when it cannot be written, the node goes on.
    private func remember(_ id: String, _ pin: Pin, line: String, in state: inout State) {
        var strangers = strangers(&state)
        state.clock += 1
        strangers[id] = Pin(key: pin.key, name: pin.name, used: state.clock)
        while strangers.count > autoCap, let oldest = strangers.min(by: { $0.value.used < $1.value.used }) {
            strangers[oldest.key] = nil
        }
        state.strangers = strangers
        var unused: FileStamp?
        do throws(NearbyError) {
            try append(line, to: autoPath, stamp: &unused)
            state.autoLines += 1
        } catch {
            let text = "\(error.errorDescription ?? "\(error)") (strangers are still pinned for as long as the node runs)"
            if state.autoFailed { NearbyLog.logger.warning("\(text)") } else { NearbyLog.logger.error("\(text)") }
            state.autoFailed = true
        }
        if state.autoLines >= 2 * autoCap { compact(&state) }
    }

    /// The strangers, read from `known_peers.auto` on first use.
    private func strangers(_ state: inout State) -> [String: Pin] {
        if let strangers = state.strangers { return strangers }
        var strangers: [String: Pin] = [:]
        let text = readTail(autoPath, limit: 2 * autoCap * 512)
        var skipped = 0
        for line in text.lines {
            guard let (id, key, name) = Self.parse(line) else {
                skipped += 1
                continue
            }
            state.clock += 1
            strangers[id] = Pin(key: key, name: name, used: state.clock)
        }
        if skipped > 0 { NearbyLog.logger.error("\(autoPath): skipped \(skipped) line(s) that are not pins") }
        for id in state.pins.keys { strangers[id] = nil }
        while strangers.count > autoCap, let oldest = strangers.min(by: { $0.value.used < $1.value.used }) {
            strangers[oldest.key] = nil
        }
        state.strangers = strangers
        state.autoLines = text.lines.count
        if text.truncated || skipped > 0 || state.autoLines >= 2 * autoCap { compact(&state) }
        return strangers
    }

    /// Writes the strangers, least recent first, to a new file that replaces `known_peers.auto`.
    private func compact(_ state: inout State) {
        let strangers = (state.strangers ?? [:]).sorted { $0.value.used < $1.value.used }
        let text = strangers.map { "\($0.key) \($0.value.key) \(Self.safe($0.value.name))\n" }.joined()
        do throws(NearbyError) {
            try replace(autoPath, with: text)
            state.autoLines = strangers.count
        } catch {
            NearbyLog.logger.error("\(error.errorDescription ?? "\(error)")")
        }
    }

    // MARK: Lines

    /// A name as it may be written: no control or line-breaking characters.
    static func safe(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.map {
            $0.properties.generalCategory == .control || $0.properties.generalCategory == .lineSeparator
                || $0.properties.generalCategory == .paragraphSeparator ? " " : $0
        }))
    }

    /// `<id> <base64 key> <name>`, or nil when the line is not a pin.
    static func parse(_ line: Substring) -> (String, String, String)? {
        let fields = line.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, PeerID(String(fields[0])) != nil, Data(base64Encoded: String(fields[1])) != nil else { return nil }
        return (String(fields[0]), String(fields[1]), fields.count > 2 ? String(fields[2]) : "")
    }

    func failure(_ reason: String) -> NearbyError {
        .ioFailure(path: path, reason: "known peers unusable, refusing connections until it is fixed: \(reason)")
    }
}
