/// What an invitation offers, when it is for files or a stream: the `offer` of the `invite` frame
/// (docs/protocol.md; a peer that sends none offers nothing named) and of the `invitation` event.
package struct Offer: Codable, Equatable, Sendable {
    /// How many files, and their bytes all together.
    package var files: Int?
    package var bytes: UInt64?
    /// The first few files' names (at most `maxNames`), as the sender lists them.
    package var names: [String]?
    /// The stream's name (`--stream`).
    package var stream: String?

    package static let maxNames = 5
    package static let maxNameBytes = 255

    package init(files: Int? = nil, bytes: UInt64? = nil, names: [String]? = nil, stream: String? = nil) {
        self.files = files
        self.bytes = bytes
        self.names = names
        self.stream = stream
    }

    /// The offer as a peer's bytes may say it, cut to what is shown: counts not negative, at most
    /// `maxNames` names, every name and the stream's at most `maxNameBytes`.
    package var bounded: Offer {
        Offer(
            files: files.map { max($0, 0) }, bytes: bytes, names: names.map { $0.prefix(Self.maxNames).map { $0.cut(toUTF8Bytes: Self.maxNameBytes) } },
            stream: stream.map { $0.cut(toUTF8Bytes: Self.maxNameBytes) })
    }
}
