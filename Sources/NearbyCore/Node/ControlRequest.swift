import Foundation
import NIOCore
import NearbyBase
import NearbyWire
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a client asks the running node to do: one JSON line, one case per command.
package enum ControlRequest: Codable, Sendable, Equatable {
    case invite(peer: String, context: String?, timeout: Double)
    /// `query`: an invitation ID or a peer; nil takes the oldest pending invitation, or the next.
    /// `timeout`: seconds to wait for an invitation when none is pending (nil: no limit).
    case accept(query: String?, decline: Bool, timeout: Double? = nil)
    case send(peers: [String], all: Bool, timeout: Double, payload: Data)
    case disconnect(peer: String?, all: Bool)
    /// Files to send: absolute paths, already checked by the client.
    /// `retryFor`: how long a link that goes mid-file is tried again (nil: the default; a node that
    /// does not know the field uses its own default).
    case sendFiles(peer: String, files: [OutgoingFile], timeout: Double, retryFor: Double? = nil)
    /// After the setup replies, the connection carries the stream's raw bytes both ways (only the
    /// peer's, when the node reads `input` itself). `pass`: the client can hand the node its
    /// stdin and stdout (`PassOffer`); a node that does not know the field ignores it.
    case stream(peer: String, name: String, timeout: Double, input: PassedInput? = nil, pass: PassOffer? = nil)
    case listen(name: String?, from: String?, input: PassedInput? = nil, pass: PassOffer? = nil)
    /// `send --lines`: after the request line the connection carries stdin's bytes (Node+Lines.swift).
    case sendLines(peers: [String], all: Bool, timeout: Double, unreliable: Bool)
    /// `send --unreliable`: one datagram.
    case sendDatagram(peers: [String], all: Bool, timeout: Double, payload: Data)
    /// A request from a command that was given options for the node it would start itself: the
    /// running node serves it only when it is that node (`NodeExpectations`).
    indirect case expecting(NodeExpectations, ControlRequest)

    /// This request, checked against `expectations` by the node when any were given.
    package func expecting(_ expectations: NodeExpectations) -> ControlRequest {
        expectations.isEmpty ? self : .expecting(expectations, self)
    }

    /// The client's stdin, when the node may read it itself.
    var passedInput: PassedInput? {
        switch self {
        case let .stream(_, _, _, input, _), let .listen(_, _, input, _): input
        case let .expecting(_, request): request.passedInput
        default: nil
        }
    }

    /// The descriptors the client offers to pass.
    var passOffer: PassOffer? {
        switch self {
        case let .stream(_, _, _, _, pass), let .listen(_, _, _, pass): pass
        case let .expecting(_, request): request.passOffer
        default: nil
        }
    }

    var carriesStream: Bool {
        switch self {
        case .stream, .listen: true
        case let .expecting(_, request): request.carriesStream
        default: false
        }
    }
}

/// The options a command was given for a node of its own (`--name`, `--encryption`, `--save-dir`).
/// Through a running node they cannot apply, so the node refuses the request when it is not
/// already what they ask for: an option is honoured or refused, never silently ignored.
package struct NodeExpectations: Codable, Sendable, Equatable {
    package var displayName: String?
    package var encryption: EncryptionPreference?
    /// Absolute and standardized.
    package var saveDirectory: String?
    /// `--domain`: unicast DNS domains the node must serve (`lab.test.`), as `domainText` spells them.
    package var domains: [String]?
    /// `--no-link`: the node must stay off the link (mDNS).
    package var offLink: Bool?

    package init(
        displayName: String? = nil, encryption: EncryptionPreference? = nil, saveDirectory: String? = nil, domains: [String]? = nil,
        offLink: Bool? = nil
    ) {
        self.displayName = displayName
        self.encryption = encryption
        self.saveDirectory = saveDirectory
        self.domains = domains
        self.offLink = offLink
    }

    var isEmpty: Bool { displayName == nil && encryption == nil && saveDirectory == nil && domains == nil && offLink == nil }
}

/// What the node answers, one JSON line each: the events of the work as they happen, then its
/// exit status — or, for a stream, `streamReady` and then raw bytes. On the wire an event is its
/// own line, the very object the node printed (`{"event":"connected",…}`), not a string of JSON
/// inside another; the others are `{"status":N}` and `{"stream_ready":{…}}`. Which one a line is,
/// is decided by its keys, strictly: anything else is an error, not a guess.
enum ControlReply: Sendable, Equatable {
    /// One event line, exactly as the node printed it.
    case event(String)
    case streamReady(StreamInfo)
    case status(Int32)
    /// The node takes the descriptors the client offered (`PassOffer`): the client sends them now,
    /// with one byte (`DescriptorPassing`), and nothing else before.
    case passDescriptors

    private struct Status: Codable { var status: Int32 }
    private struct Pass: Codable {
        var passDescriptors: Bool
        enum CodingKeys: String, CodingKey { case passDescriptors = "pass_descriptors" }
    }
    private struct Ready: Codable {
        var streamReady: StreamInfo
        enum CodingKeys: String, CodingKey { case streamReady = "stream_ready" }
    }
    /// The keys that tell the kinds apart: an event line has a string `event` (and may have
    /// fields of any other name, `status` too); the others have exactly theirs.
    private struct EventProbe: Decodable { var event: String? }
    private struct Probe: Decodable {
        var status: Int32?
        var streamReady: StreamInfo?
        var passDescriptors: Bool?
        enum CodingKeys: String, CodingKey {
            case status
            case streamReady = "stream_ready"
            case passDescriptors = "pass_descriptors"
        }
    }

    var line: String {
        let encoded: Data?
        switch self {
        case let .event(line): return line
        case let .status(status): encoded = try? JSONEncoder().encode(Status(status: status))
        case let .streamReady(info): encoded = try? JSONEncoder().encode(Ready(streamReady: info))
        case .passDescriptors: encoded = try? JSONEncoder().encode(Pass(passDescriptors: true))
        }
        return String(decoding: encoded ?? Data(#"{"status":1}"#.utf8), as: UTF8.self)
    }

    static func decode(_ line: String) throws(NearbyError) -> ControlReply {
        let data = Data(line.utf8)
        if (try? JSONDecoder().decode(EventProbe.self, from: data))?.event != nil { return .event(line) }
        if let probe = try? JSONDecoder().decode(Probe.self, from: data) {
            switch (probe.status, probe.streamReady, probe.passDescriptors) {
            case let (nil, info?, nil): return .streamReady(info)
            case let (status?, nil, nil): return .status(status)
            case (nil, nil, true?): return .passDescriptors
            default: break
            }
        }
        throw .connectionFailed("the node answered something this version does not understand")
    }
}

/// Which stream a node opened for a client: what the client's own `stream-closed` names.
package struct StreamInfo: Codable, Sendable, Equatable {
    package var stream: String
    package var peer: PeerRef
    package var name: String
    /// The node reads the client's input itself (`PassedInput`, or its passed stdin): the client
    /// sends none of it.
    package var readsInput: Bool?
    /// The node writes the client's passed stdout itself: the client receives none of the bytes.
    package var writesOutput: Bool?
}

/// The descriptors a stream's client can pass to the node, in this order: its stdin (`input`),
/// its stdout (`output`). Never a terminal; none with `NEARBY_PASS_FDS=0`.
package struct PassOffer: Codable, Sendable, Equatable {
    package var input: Bool
    package var output: Bool

    package init(input: Bool, output: Bool) {
        self.input = input
        self.output = output
    }

    package var count: Int { (input ? 1 : 0) + (output ? 1 : 0) }
}

/// A stream client's stdin when it is a regular file: the node opens it itself and reads it from
/// `offset` to its end, instead of the client reading it and copying every byte over the control
/// socket (the copy took a quarter of the speed of a stream through a node). The node takes it only
/// when what it opens is that same file (device and inode), else the client copies as before.
package struct PassedInput: Codable, Sendable, Equatable {
    package var path: String
    package var device: UInt64
    package var inode: UInt64
    package var offset: UInt64

    /// This process's stdin, when the node could read it (Linux, a regular file), else nil.
    package static func standardInput() -> PassedInput? {
        #if os(Linux)
        var info = stat()
        guard fstat(STDIN_FILENO, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let offset = lseek(STDIN_FILENO, 0, SEEK_CUR)
        guard offset >= 0 else { return nil }
        // Through /proc, the file this descriptor has open, even renamed or deleted since.
        return PassedInput(
            path: "/proc/\(getpid())/fd/\(STDIN_FILENO)", device: UInt64(info.st_dev), inode: UInt64(info.st_ino), offset: UInt64(offset))
        #else
        return nil
        #endif
    }
}

/// Splits the first lines off a byte stream, bounded: a request line at most `requestLimit` (what
/// the largest request carries: a 1 MiB message as base64, and the request around it), an answer
/// line at most 8 MiB (a 1 MiB message of text, escaped). A line may come in any number of reads,
/// of any size; each byte is looked at once (where the search for the newline stopped is
/// remembered). What follows the line (`rest`) is left untouched, for the raw bytes of a stream.
struct LineReader {
    static let answerLimit = 8 << 20
    /// 1 MiB as base64 (1,398,104 bytes) and 64 KiB for the rest of the request: 1,463,640 bytes.
    static let requestLimit = (Frame.maxPayload + 2) / 3 * 4 + (64 << 10)
    let limit: Int
    private var pending = ByteBuffer()
    /// How many bytes after `pending.readerIndex` are known to hold no newline.
    private var searched = 0

    init(limit: Int = LineReader.answerLimit) { self.limit = limit }

    /// The line `chunk` completes, or nil when it needs more; throws once a line is over `limit`.
    mutating func append(_ chunk: ByteBuffer) throws(NearbyError) -> String? {
        var chunk = chunk
        pending.writeBuffer(&chunk)
        return try line()
    }

    /// The next complete line already buffered, if any.
    mutating func line() throws(NearbyError) -> String? {
        let view = pending.readableBytesView
        guard let newline = view[(view.startIndex + searched)...].firstIndex(of: UInt8(ascii: "\n")) else {
            searched = view.count
            guard pending.readableBytes <= limit else { throw tooLong }
            return nil
        }
        let length = newline - view.startIndex
        guard length <= limit else { throw tooLong }
        searched = 0
        let text = pending.readString(length: length) ?? ""
        pending.moveReaderIndex(forwardBy: 1)
        return text
    }

    var rest: ByteBuffer { pending }

    private var tooLong: NearbyError {
        .invalidArgument("a line on the control socket is over its limit of \(limit) bytes")
    }
}
