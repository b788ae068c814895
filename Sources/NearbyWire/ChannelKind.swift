/// What a channel carries, as the `open` frame names it. A name this version does not know is kept
/// (capped) so the refusal can say it, never a decoding failure.
package enum ChannelKind: Codable, Equatable, Sendable, CustomStringConvertible {
    case file
    case stream
    /// An empty directory of a sent tree: made on the receiving side, no data.
    case directory
    /// Many small files on one channel (`Bundle`), to a peer whose hello lists the feature.
    case bundle
    case other(String)

    package init(from decoder: any Decoder) throws {
        self.init(name: try decoder.singleValueContainer().decode(String.self))
    }

    /// The kind an `open` names.
    package init(name: String) {
        self = switch name {
        case "file": .file
        case "stream": .stream
        case "directory": .directory
        case "bundle": .bundle
        default: .other(String(name.prefix(32)))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    package var description: String {
        switch self {
        case .file: "file"
        case .stream: "stream"
        case .directory: "directory"
        case .bundle: "bundle"
        case let .other(name): name
        }
    }
}

/// Why a channel ended early, for programs: carried by `reset` and refusing `openReply` frames, and
/// by `file-failed` events and the error of a transfer (docs/events.md). A peer's code this version
/// does not know is kept (capped), never a decoding failure.
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
    case other(String)

    private static let names: [(TransferCode, String)] = [
        (.cancelled, "cancelled"), (.connectionLost, "connection-lost"), (.connectionFailed, "connection-failed"),
        (.ioError, "io-error"), (.integrity, "integrity"), (.protocolBroken, "protocol"), (.refused, "refused"),
        (.noSaveDir, "no-save-dir"), (.streamRefused, "stream-refused"), (.streamReset, "stream-reset"),
        (.busy, "busy"), (.quota, "quota"),
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
