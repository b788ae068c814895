import NIOCore
import NearbyBase
import NearbyWire

/// A bundle: many small files on one channel (docs/protocol.md, "Bundles"). The sender offers
/// `open` of kind `bundle` (its `size` the sum of the files' sizes), and once accepted sends each
/// file as a record in the channel's data — its path, key and size, its bytes, its SHA-256 — then
/// its `close`. The receiver writes, checks and places each file as a file channel's (partial file,
/// SHA-256, atomic placement, the same events), answers each with a result record in data on the
/// same channel, and closes after the last. One round trip and one channel for up to `maxFiles`
/// files, not two round trips and four frames each. Spoken only to a peer whose hello lists
/// `feature`.
package enum Bundle {
    /// Listed in the hello's `features` by a node that takes bundles.
    package static let feature = FrameBody.bundleFeature
    /// Files in one bundle.
    package static let maxFiles = 64
    /// A file goes in a bundle when it is at most this big.
    package static let maxFileBytes: UInt64 = 64 << 10
    /// The files' bytes in one bundle (the offer's `size`).
    package static let maxBytes: UInt64 = 1 << 20
    package static let maxPathBytes = 4096
    package static let maxKeyBytes = 64
    /// A result's words (a saved name or a reason).
    package static let maxTextBytes = 1024
    package static let digestBytes = 32

    /// One file's record head: what the receiver learns before its bytes.
    package struct Entry: Sendable, Equatable {
        package var index: Int
        package var path: String
        package var key: String
        package var size: UInt64
        /// Nanoseconds since 1970, from a sender whose receiver lists `dates` (0: not known).
        package var modified: UInt64? = nil
    }

    /// The record of one file: head (with the modification time when `modified` is given: to a
    /// receiver that lists `dates`), bytes, SHA-256 (the raw 32 bytes).
    package static func writeRecord(
        path: String, key: String, modified: UInt64? = nil, content: ByteBuffer, digest: some Sequence<UInt8>, into out: inout ByteBuffer
    ) {
        let pathBytes = Array(path.utf8.prefix(maxPathBytes))
        let keyBytes = Array(key.utf8.prefix(maxKeyBytes))
        out.writeInteger(UInt16(pathBytes.count))
        out.writeBytes(pathBytes)
        out.writeInteger(UInt8(keyBytes.count))
        out.writeBytes(keyBytes)
        out.writeInteger(UInt64(content.readableBytes))
        if let modified { out.writeInteger(modified) }
        out.writeImmutableBuffer(content)
        out.writeBytes(digest)
    }

    /// What the receiver says of one file.
    package enum Result: Sendable, Equatable {
        /// In place; `savedAs` when under another name than its own (`x (1).txt`).
        case placed(savedAs: String?)
        /// A complete copy was there already and was kept.
        case alreadyThere(savedAs: String?)
        case failed(code: TransferCode, reason: String)
    }

    package static func writeResult(_ index: Int, _ result: Result, into out: inout ByteBuffer) {
        out.writeInteger(UInt32(index))
        let status: UInt8, code: String, text: String
        switch result {
        case let .placed(savedAs): (status, code, text) = (0, "", savedAs ?? "")
        case let .alreadyThere(savedAs): (status, code, text) = (1, "", savedAs ?? "")
        case let .failed(failure, reason): (status, code, text) = (2, failure.description, reason)
        }
        out.writeInteger(status)
        let codeBytes = Array(code.utf8.prefix(32)), textBytes = Array(text.utf8.prefix(maxTextBytes))
        out.writeInteger(UInt8(codeBytes.count))
        out.writeBytes(codeBytes)
        out.writeInteger(UInt16(textBytes.count))
        out.writeBytes(textBytes)
    }
}

/// The receiver's reading of a bundle's data, as a pure state machine: bytes in (frames cut
/// anywhere), pieces out — a file begins, its bytes, it ends with the sender's SHA-256. Every
/// count is checked against the bounds and the offer before anything is made for it; a bundle
/// that breaks one is an `Illegal` error (the link is cut as for any protocol violation).
struct BundleDecoder: Sendable {
    package enum Piece: Sendable, Equatable {
        case begin(Bundle.Entry)
        case bytes(ByteBuffer)
        case end(sha256: [UInt8])
    }

    package enum Illegal: Error, Sendable, Equatable, CustomStringConvertible {
        case badPath
        case badKey
        case tooBig(UInt64)
        case tooMany
        case pastOffer(UInt64)
        case unfinished
        case empty
        case afterClose

        package var description: String {
            switch self {
            case .badPath: "a bundle's file without a path, or with more than \(Bundle.maxPathBytes) bytes of one, or not UTF-8"
            case .badKey: "a bundle's file key over \(Bundle.maxKeyBytes) bytes, or not ASCII"
            case let .tooBig(size): "a bundle's file of \(size) bytes (at most \(Bundle.maxFileBytes))"
            case .tooMany: "more than \(Bundle.maxFiles) files in a bundle"
            case let .pastOffer(size): "a bundle's files past the \(size) bytes its offer announced"
            case .unfinished: "a bundle closed in the middle of a file, or short of the bytes its offer announced"
            case .empty: "a bundle without a file"
            case .afterClose: "bundle data after its close"
            }
        }
    }

    private enum State: Sendable {
        case head
        case content(remaining: UInt64)
        case digest
        case closed
    }

    /// What the offer announced: the files' bytes together.
    package let announced: UInt64
    /// Each head carries a modification time (the sender saw our `dates`, and lists it itself).
    package let dates: Bool
    private var state = State.head
    /// A head or digest cut between frames, kept until it is whole (bounded by the largest head).
    private var held = ByteBuffer()
    private var files = 0
    private var content: UInt64 = 0

    package init(announced: UInt64, dates: Bool = false) {
        self.announced = announced
        self.dates = dates
    }

    package var fileCount: Int { files }

    /// The pieces `data` completes.
    package mutating func feed(_ data: ByteBuffer) throws(Illegal) -> [Piece] {
        var data = data
        var pieces: [Piece] = []
        while data.readableBytes > 0 {
            switch state {
            case .closed:
                throw .afterClose
            case let .content(remaining):
                let count = Int(min(remaining, UInt64(data.readableBytes)))
                if let slice = data.readSlice(length: count) { pieces.append(.bytes(slice)) }
                state = remaining - UInt64(count) == 0 ? .digest : .content(remaining: remaining - UInt64(count))
            case .digest:
                let want = Bundle.digestBytes - held.readableBytes
                if let part = data.readSlice(length: min(want, data.readableBytes)) { held.writeImmutableBuffer(part) }
                guard held.readableBytes == Bundle.digestBytes, let digest = held.readBytes(length: Bundle.digestBytes) else { continue }
                held.clear()
                pieces.append(.end(sha256: digest))
                state = .head
            case .head:
                // Take bytes one field at a time until the head is whole; never more than one head.
                let need = try headLength()
                if held.readableBytes < need {
                    if let part = data.readSlice(length: min(need - held.readableBytes, data.readableBytes)) { held.writeImmutableBuffer(part) }
                    continue
                }
                if let entry = try head() {
                    pieces.append(.begin(entry))
                    state = entry.size == 0 ? .digest : .content(remaining: entry.size)
                }
            }
        }
        // A head that is whole once the bytes above are in (a file of 0 bytes ends at its digest).
        if case .head = state, held.readableBytes > 0, try headLength() == held.readableBytes, let entry = try head() {
            pieces.append(.begin(entry))
            state = entry.size == 0 ? .digest : .content(remaining: entry.size)
        }
        return pieces
    }

    /// The sender's close: every file whole, the bytes the offer announced.
    package mutating func close() throws(Illegal) {
        guard case .head = state, held.readableBytes == 0 else { throw .unfinished }
        guard files > 0 else { throw .empty }
        guard content == announced else { throw .unfinished }
        state = .closed
    }

    /// How many bytes the head held so far needs to be whole: it grows as its lengths arrive.
    private func headLength() throws(Illegal) -> Int {
        var length = 2
        guard held.readableBytes >= 2, let pathBytes = held.getInteger(at: held.readerIndex, as: UInt16.self) else { return length }
        guard pathBytes > 0, Int(pathBytes) <= Bundle.maxPathBytes else { throw .badPath }
        length += Int(pathBytes) + 1
        guard held.readableBytes >= length, let keyBytes = held.getInteger(at: held.readerIndex + length - 1, as: UInt8.self) else { return length }
        guard Int(keyBytes) <= Bundle.maxKeyBytes else { throw .badKey }
        return length + Int(keyBytes) + (dates ? 16 : 8)
    }

    /// The whole head taken out of `held`, checked.
    private mutating func head() throws(Illegal) -> Bundle.Entry? {
        guard held.readableBytes == (try headLength()) else { return nil }
        guard let pathLength = held.readInteger(as: UInt16.self),
              let pathBytes = held.readBytes(length: Int(pathLength)),
              let path = String(validating: pathBytes, as: UTF8.self) else { throw .badPath }
        guard let keyLength = held.readInteger(as: UInt8.self), let keyBytes = held.readBytes(length: Int(keyLength)),
              keyBytes.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) else { throw .badKey }
        guard let size = held.readInteger(as: UInt64.self) else { throw .unfinished }
        let modified = dates ? held.readInteger(as: UInt64.self) : nil
        held.clear()
        guard size <= Bundle.maxFileBytes else { throw .tooBig(size) }
        guard files < Bundle.maxFiles else { throw .tooMany }
        guard content + size <= announced else { throw .pastOffer(announced) }
        content += size
        files += 1
        return Bundle.Entry(
            index: files - 1, path: path, key: String(decoding: keyBytes, as: UTF8.self), size: size, modified: modified == 0 ? nil : modified)
    }
}

/// The sender's reading of the receiver's results, as a pure state machine: one per file of the
/// bundle, each once, in any order.
struct BundleResults: Sendable {
    package enum Illegal: Error, Sendable, Equatable, CustomStringConvertible {
        case unknownFile(Int)
        case twice(Int)
        case badStatus
        case tooLong

        package var description: String {
            switch self {
            case let .unknownFile(index): "a result for file \(index), which the bundle does not have"
            case let .twice(index): "a second result for file \(index)"
            case .badStatus: "a result of an unknown kind"
            case .tooLong: "a result longer than \(Bundle.maxTextBytes) bytes"
            }
        }
    }

    package let files: Int
    private var held = ByteBuffer()
    private var answered: Set<Int> = []

    package init(files: Int) {
        self.files = files
    }

    package var complete: Bool { answered.count == files }

    package mutating func feed(_ data: ByteBuffer) throws(Illegal) -> [(index: Int, result: Bundle.Result)] {
        held.writeImmutableBuffer(data)
        var results: [(Int, Bundle.Result)] = []
        while let (length, index) = try nextLength() {
            guard held.readableBytes >= length else { break }
            guard index < files else { throw .unknownFile(index) }
            guard answered.insert(index).inserted else { throw .twice(index) }
            held.moveReaderIndex(forwardBy: 4)
            let status = held.readInteger(as: UInt8.self) ?? 255
            let codeLength = Int(held.readInteger(as: UInt8.self) ?? 0)
            let code = held.readString(length: codeLength) ?? ""
            let textLength = Int(held.readInteger(as: UInt16.self) ?? 0)
            let text = held.readBytes(length: textLength).map { String(decoding: $0, as: UTF8.self) } ?? ""
            switch status {
            case 0: results.append((index, .placed(savedAs: text.isEmpty ? nil : text)))
            case 1: results.append((index, .alreadyThere(savedAs: text.isEmpty ? nil : text)))
            case 2: results.append((index, .failed(code: TransferCode(code), reason: text)))
            default: throw .badStatus
            }
        }
        held.discardReadBytes()
        return results
    }

    /// The length of the next whole result and its file, once its lengths are in.
    private func nextLength() throws(Illegal) -> (Int, Int)? {
        let start = held.readerIndex
        guard let index = held.getInteger(at: start, as: UInt32.self),
              let codeLength = held.getInteger(at: start + 5, as: UInt8.self),
              let textLength = held.getInteger(at: start + 6 + Int(codeLength), as: UInt16.self) else { return nil }
        guard codeLength <= 32, Int(textLength) <= Bundle.maxTextBytes else { throw .tooLong }
        return (4 + 1 + 1 + Int(codeLength) + 2 + Int(textLength), Int(index))
    }
}
