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
