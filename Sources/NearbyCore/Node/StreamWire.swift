import Foundation
import NIOCore
import NearbyBase

/// A stream's bytes on a control connection, after `streamReady`: records, each a kind byte and a
/// 32-bit big-endian length, then that many bytes. Both ways: `data`, then one `end` when that side's
/// input ended. From the node only, last: the stream's `outcome` (JSON). A connection that ends
/// without `end` is a client that left (Ctrl-C, killed), never the end of its input; one that ends
/// without `outcome` is a node that went away: either way the stream was cut, and nobody takes a
/// truncated stream for a finished one.
enum StreamWire {
    package enum Kind: UInt8, Sendable {
        case data = 0
        case end = 1
        case outcome = 2
    }

    package enum Record: Sendable, Equatable {
        case data(ByteBuffer)
        case end
        case outcome(StreamOutcome)
    }

    package enum Violation: Error, Equatable {
        case unknownKind(UInt8)
        case badLength(kind: UInt8, length: UInt32)
        case dataAfterEnd
        case secondEnd
        case afterOutcome
        case badOutcome
    }

    static let headerSize = 5
    /// Larger records are refused: a data record is one chunk of stdin or of the peer's bytes.
    static let maxData: UInt32 = 16 << 20
    static let maxOutcome: UInt32 = 64 << 10

    package static func header(_ kind: Kind, length: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerSize)
        buffer.writeInteger(kind.rawValue)
        buffer.writeInteger(UInt32(length))
        return buffer
    }

    package static var end: ByteBuffer { header(.end, length: 0) }

    package static func outcome(_ outcome: StreamOutcome) -> ByteBuffer {
        let json = (try? JSONEncoder().encode(outcome)) ?? Data("{}".utf8)
        var buffer = header(.outcome, length: json.count)
        buffer.writeBytes(json)
        return buffer
    }

    /// Splits what arrives into records, without copying data: a data record comes out in as many
    /// pieces as it arrived in.
    package struct Reader: Sendable {
        private enum State: Sendable {
            case header(ByteBuffer)
            case data(remaining: Int)
            case outcome(remaining: Int, ByteBuffer)
            case finished
        }

        private var state: State = .header(ByteBuffer())
        /// The sender's `end` arrived.
        package private(set) var ended = false
        package var finished: Bool { if case .finished = state { true } else { false } }

        package init() {}

        /// The next record (or piece of a data record) from `input`, consuming it; nil when `input`
        /// holds no complete one yet.
        package mutating func next(from input: inout ByteBuffer) throws(Violation) -> Record? {
            while true {
                switch state {
                case .finished:
                    if input.readableBytes > 0 { throw .afterOutcome }
                    return nil
                case let .data(remaining):
                    let count = min(remaining, input.readableBytes)
                    guard count > 0, let piece = input.readSlice(length: count) else { return nil }
                    state = count == remaining ? .header(ByteBuffer()) : .data(remaining: remaining - count)
                    return .data(piece)
                case .outcome(let remaining, var collected):
                    let count = min(remaining, input.readableBytes)
                    guard count > 0, var piece = input.readSlice(length: count) else { return nil }
                    collected.writeBuffer(&piece)
                    guard count == remaining else {
                        state = .outcome(remaining: remaining - count, collected)
                        return nil
                    }
                    state = .finished
                    guard let outcome = try? JSONDecoder().decode(StreamOutcome.self, from: Data(collected.readableBytesView)) else {
                        throw .badOutcome
                    }
                    return .outcome(outcome)
                case var .header(partial):
                    let count = min(StreamWire.headerSize - partial.readableBytes, input.readableBytes)
                    guard count > 0, var piece = input.readSlice(length: count) else { return nil }
                    partial.writeBuffer(&piece)
                    guard partial.readableBytes == StreamWire.headerSize,
                          let kind = partial.readInteger(as: UInt8.self), let length = partial.readInteger(as: UInt32.self)
                    else {
                        state = .header(partial)
                        return nil
                    }
                    state = .header(ByteBuffer())
                    if let record = try start(kind: kind, length: length) { return record }
                }
            }
        }

        private mutating func start(kind: UInt8, length: UInt32) throws(Violation) -> Record? {
            switch Kind(rawValue: kind) {
            case .data?:
                guard !ended else { throw .dataAfterEnd }
                guard length > 0, length <= StreamWire.maxData else { throw .badLength(kind: kind, length: length) }
                state = .data(remaining: Int(length))
                return nil
            case .end?:
                guard !ended else { throw .secondEnd }
                guard length == 0 else { throw .badLength(kind: kind, length: length) }
                ended = true
                return .end
            case .outcome?:
                guard length > 0, length <= StreamWire.maxOutcome else { throw .badLength(kind: kind, length: length) }
                state = .outcome(remaining: Int(length), ByteBuffer())
                return nil
            case nil:
                throw .unknownKind(kind)
            }
        }
    }
}

/// How a stream that ran through a running node ended, for its client: done, or the failure the
/// client reports exactly as it would have run the stream itself.
package struct StreamOutcome: Codable, Sendable, Equatable {
    package var failure: Failure?
    /// Bytes the node itself read from the client's passed stdin, and wrote to its passed stdout:
    /// nil for a direction the client carried itself (and counted).
    package var sent: UInt64?
    package var received: UInt64?

    package struct Failure: Codable, Sendable, Equatable {
        package var path: String
        package var code: String
        package var reason: String
    }

    package static let done = StreamOutcome(failure: nil)

    package init(failure: Failure?, sent: UInt64? = nil, received: UInt64? = nil) {
        self.failure = failure
        self.sent = sent
        self.received = received
    }

    /// The outcome of a failure: stream failures are `transferFailed` (StreamLife.Cause.error).
    package init(_ error: NearbyError) {
        switch error {
        case let .transferFailed(path, code, reason): failure = Failure(path: path, code: code.description, reason: reason)
        default: failure = Failure(path: "the stream", code: error.code, reason: error.errorDescription ?? "failed")
        }
    }

    /// The error the client throws; nil when the stream is done.
    package var error: NearbyError? { failure.map { .transferFailed(path: $0.path, code: TransferCode($0.code), reason: $0.reason) } }
}
