/// Why a transfer ended early, for programs: carried by `reset` and refusing `openReply` frames, and
/// by `file-failed` events and the error of a transfer (`NearbyError.transferFailed`, so it lives
/// in the base; docs/events.md). LocalSend's and the web's failures say theirs with it too. A peer's
/// code this version does not know is kept (capped), never a decoding failure.
package enum TransferCode: Codable, Hashable, Sendable, CustomStringConvertible {
    /// Interrupted by its sender (Ctrl-C, the client went away).
    case cancelled
    /// The session ended under it.
    case connectionLost
    case connectionFailed
    case ioError
    /// The data arrived damaged.
    case integrity
    /// The peer broke the file protocol.
    case protocolBroken
    case refused
    case noSaveDir
    case streamRefused
    case streamReset
    /// The receiver's budget of descriptors (ResourceBudget) had no room for one more open file.
    case busy
    /// The receiver's quota on strangers' unfinished files took this one back.
    case quota
    /// More than was announced, or than a stranger may leave (LocalSend, the drop box).
    case tooLarge
    /// Sent too slowly: the receiver ended it (LocalSend).
    case timeout
    /// Fewer bytes arrived than were announced (LocalSend).
    case incomplete
    /// An upload's form was not one the drop box reads.
    case malformed
    /// A file of the web share left out of the download (the ZIP of a folder).
    case skipped
    /// The web share's deadline passed before every file was downloaded in full.
    case notDownloaded
    case other(String)

    private static let names: [(TransferCode, String)] = [
        (.cancelled, "cancelled"), (.connectionLost, "connection-lost"), (.connectionFailed, "connection-failed"),
        (.ioError, "io-error"), (.integrity, "integrity"), (.protocolBroken, "protocol"), (.refused, "refused"),
        (.noSaveDir, "no-save-dir"), (.streamRefused, "stream-refused"), (.streamReset, "stream-reset"),
        (.busy, "busy"), (.quota, "quota"), (.tooLarge, "too-large"), (.timeout, "timeout"), (.incomplete, "incomplete"),
        (.malformed, "malformed"), (.skipped, "skipped"), (.notDownloaded, "not-downloaded"),
    ]

    package init(_ name: String) {
        self = Self.names.first { $0.1 == name }?.0 ?? .other(String(name.prefix(32)))
    }

    package init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    package var description: String {
        if case let .other(name) = self { return name }
        return Self.names.first { $0.0 == self }?.1 ?? "refused"
    }

    /// A transfer cut this way may resume: what arrived was not at fault.
    package var resumable: Bool { self == .cancelled || self == .connectionLost }
}
