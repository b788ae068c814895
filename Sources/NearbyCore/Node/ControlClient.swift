import Foundation
import NIOCore
import NIOPosix
import NearbyBase
import NearbyControl
import NearbyWire
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command's side of the control socket.
package enum ControlClient {
    static func connect(_ address: NodeAddress) async -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? {
        guard FileManager.default.fileExists(atPath: address.socket) else { return nil }
        return try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.recvAllocator, value: Connections.receiveBuffer)
            .connect(unixDomainSocketPath: address.socket) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
    }

    /// The node's reply lines: each event line to `output`, until the final status (nil when the
    /// node closed the connection without one).
    static func status(
        from inbound: NIOAsyncChannelInboundStream<ByteBuffer>, output: @Sendable (String) -> Void
    ) async throws -> Int32? {
        var reader = LineReader()
        for try await chunk in inbound {
            var next = try reader.append(chunk)
            while let text = next {
                switch try ControlReply.decode(text) {
                case let .event(line): output(line)
                case let .status(status): return status
                case .streamReady, .passDescriptors: throw NearbyError.connectionFailed("the node opened a stream nobody asked for")
                }
                next = try reader.line()
            }
        }
        return nil
    }

    /// Slashes unescaped: a 1 MiB message is then at most 1.4 MB of base64, within the node's
    /// `LineReader.requestLimit` (escaped, base64's slashes could double it).
    static func requestLine(_ request: ControlRequest) throws -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return ByteBuffer(bytes: try encoder.encode(request) + Data("\n".utf8))
    }

    /// Sends a request to the running node and passes its event lines to `output` as they come.
    /// Returns the node's exit status for the work, or nil when no node is running (a socket file
    /// nobody listens on is a node that is gone). Cancelling the caller closes the connection, and
    /// the node drops the work.
    package static func perform(
        _ request: ControlRequest, address: NodeAddress, output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(try requestLine(request))
                if let status = try await status(from: inbound, output: output) { return status }
                if Task.isCancelled { throw NearbyError.cancelled("waiting for the node") }
                throw NearbyError.connectionFailed("the node closed the control connection before answering")
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            if Task.isCancelled { throw .cancelled("waiting for the node") }
            throw .connectionFailed("talking to the node failed: \(ErrorWords.describe(error))")
        }
    }

    /// Sends `descriptors` to the node that asked for them; when they cannot go, the byte goes
    /// alone, and the node carries the stream over the connection as before.
    static func pass(_ descriptors: [Int32], on channel: any Channel) async {
        guard let socket = await DescriptorPassing.duplicateSocket(of: channel) else { return }
        defer { close(socket) }
        do {
            try DescriptorPassing.send(descriptors, on: socket)
        } catch .system {
            try? DescriptorPassing.send([], on: socket)
        } catch {}
    }

    /// How a stream through the running node went.
    package enum StreamResult: Sendable {
        /// It ran: what it was, and how it ended (done, or cut: the same failure as without a node).
        case ran(StreamInfo, StreamOutcome)
        /// It never started: the node's exit status.
        case failed(Int32)
    }

    /// A stream through the running node: its setup events go to `output`, then `source` goes to
    /// the peer and the peer's bytes to `sink` (`StreamWire` records) until the node sends the
    /// stream's outcome. Nil when no node is running. `passing`: the descriptors the request's
    /// `PassOffer` names, sent when the node asks for them (PassedStdio.swift).
    package static func stream(
        _ request: ControlRequest, address: NodeAddress, source: any ByteSource, sink: any ByteSink, passing: [Int32] = [],
        output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> StreamResult? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(try requestLine(request))
                var iterator = inbound.makeAsyncIterator()
                var reader = LineReader()
                var opened: StreamInfo?
                // Setup: event lines, then `streamReady` — or a final status when it failed.
                setup: while let chunk = try await iterator.next() {
                    var next = try reader.append(chunk)
                    while let text = next {
                        switch try ControlReply.decode(text) {
                        case let .event(line): output(line)
                        case let .status(status): return .failed(status)
                        case .passDescriptors: await pass(passing, on: channel.channel)
                        case let .streamReady(info):
                            opened = info
                            break setup
                        }
                        next = try reader.line()
                    }
                }
                guard let opened else { throw NearbyError.connectionFailed("the node closed the control connection before the stream opened") }
                var pending = reader.rest
                // When the node reads our input itself, we send nothing and stay until its outcome:
                // closing our side earlier would tell it we left (Ctrl-C, say), and it would stop.
                let nodeReads = opened.readsInput == true
                let writeFailure = OneShot<any Error>()
                let outcome: StreamOutcome = try await withThrowingTaskGroup(of: Void.self) { group in
                    defer { group.cancelAll() }
                    let raw = channel.channel
                    if !nodeReads {
                        group.addTask {
                            do {
                                while let chunk = try await source.next() {
                                    try await outbound.write(contentsOf: [StreamWire.header(.data, length: chunk.readableBytes), chunk])
                                }
                                try await outbound.write(StreamWire.end)
                            } catch {
                                // Our input failed: leave, and the node cuts the stream.
                                writeFailure.settle(error)
                                try? await raw.close()
                            }
                        }
                    }
                    var records = StreamWire.Reader()
                    var finished = false
                    while true {
                        while let record = try records.next(from: &pending) {
                            switch record {
                            case let .data(piece):
                                do {
                                    try await sink.write(piece)
                                } catch {
                                    // Our output failed (a full disk): the same sentence as without a node.
                                    throw StreamLife.Cause(error).error(label: opened.name.isEmpty ? "the stream" : "stream '\(opened.name)'")
                                }
                            case .end:
                                finished = true
                                await sink.finish()
                            case let .outcome(outcome):
                                if !finished {
                                    finished = true
                                    await sink.finish()
                                }
                                // The node's last word. Our input may still be on its way, its
                                // writer waiting for room the node will never make (a stream cut
                                // at the other end): closing fails that write, so it ends.
                                raw.close(promise: nil)
                                return outcome
                            }
                        }
                        guard let chunk = try await iterator.next() else {
                            if writeFailure.isSettled, let error = await writeFailure.wait() { throw error }
                            throw NearbyError.connectionFailed("the node closed the control connection before the stream ended")
                        }
                        pending = chunk
                    }
                }
                return .ran(opened, outcome)
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            if Task.isCancelled { throw .cancelled("the stream through the node") }
            throw .connectionFailed("the stream through the node failed: \(ErrorWords.describe(error))")
        }
    }
}

extension ControlClient {
    /// `send --lines` through the running node: the request, then `source`'s bytes as they come
    /// (the node cuts them into lines), then EOF; the node's event lines go to `output`. Nil when no
    /// node is running.
    package static func sendLines(
        _ request: ControlRequest, address: NodeAddress, source: any ByteSource, output: @escaping @Sendable (String) -> Void
    ) async throws(NearbyError) -> Int32? {
        guard let channel = await connect(address) else { return nil }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(try requestLine(request))
                return try await withThrowingTaskGroup(of: Int32?.self) { group in
                    group.addTask {
                        // A failed write means the node answered and closed: its status says why.
                        do {
                            while let chunk = try await source.next() { try await outbound.write(chunk) }
                            outbound.finish()
                        } catch {}
                        return nil
                    }
                    group.addTask {
                        if let status = try await status(from: inbound, output: output) { return status }
                        throw NearbyError.connectionFailed("the node closed the control connection before answering")
                    }
                    // The node's answer ends it, even while stdin is still open (a failure).
                    while let result = try await group.next() {
                        if let status = result {
                            group.cancelAll()
                            return status
                        }
                    }
                    throw NearbyError.connectionFailed("the node closed the control connection before answering")
                }
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("talking to the node failed: \(ErrorWords.describe(error))")
        }
    }
}
