import NIOCore
import NearbyBase
import NearbyControl
import NearbyTransfer

/// A stream client's bytes (`StreamWire` records) after its request line: its `end` is the end of
/// its input; the connection ending before it is the client leaving, which cuts the stream.
final class RecordSource: ByteSource, @unchecked Sendable {
    /// Only the one reader touches these.
    private var pending: ByteBuffer
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var reader = StreamWire.Reader()

    init(leftover: ByteBuffer?, iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) {
        self.pending = leftover ?? ByteBuffer()
        self.iterator = iterator
    }

    func next() async throws -> ByteBuffer? {
        while true {
            if reader.ended { return nil }
            switch try reader.next(from: &pending) {
            case let .data(piece)?: return piece
            case .end?: return nil
            case .outcome?: throw NearbyError.invalidArgument("a stream's client sent an outcome")
            case nil: break
            }
            guard let chunk = try await iterator.next() else { throw NearbyError.cancelled("the stream's client left") }
            pending = chunk
        }
    }
}

/// The peer's bytes to a stream's client, as `StreamWire` records; `finish` sends `end` (the peer's
/// input ended) and `conclude` the outcome, after which the node half-closes the connection.
final class RecordSink: ByteSink {
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let ended = Locked(false)

    init(_ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) { self.outbound = outbound }

    func write(_ buffer: ByteBuffer) async throws {
        do {
            try await outbound.write(contentsOf: [StreamWire.header(.data, length: buffer.readableBytes), buffer])
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // The client is gone (its own output failed, say: a full disk): said in words, which
            // the peer hears too, not as NIO's "I/O on closed channel".
            throw NearbyError.ioFailure(path: "the command receiving the stream", reason: "it went away (its output failed, or it was stopped)")
        }
    }

    func finish() async {
        guard ended.withLock({ ended in defer { ended = true }; return !ended }) else { return }
        try? await outbound.write(StreamWire.end)
    }

    /// The stream's outcome, last; then our side of the connection closes once it is written.
    func conclude(_ outcome: StreamOutcome) async {
        try? await outbound.write(StreamWire.outcome(outcome))
        outbound.finish()
    }
}

extension ControlServer {
    /// A stream request: set-up lines, then the stream's records both ways, then its outcome. The
    /// client leaving cancels it at any point: a listener still waiting leaves the node's waiting
    /// listeners at once, and a running stream is reset, so the peer sees it cut.
    static func serveStream(
        _ request: ControlRequest, node: Node, connection: ControlConnection,
        rest: (ByteBuffer, NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator),
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, events: any EventSink,
        ready: @escaping @Sendable (StreamInfo) async -> Void,
        failed: @escaping @Sendable (NearbyError) -> Void,
        ask: @escaping @Sendable () -> Void = {}
    ) async {
        // The client's stdin and stdout, when it passed them (PassedStdio.swift).
        let stdio: PassedStdio?
        do throws(NearbyError) {
            stdio = try await PassedStdio.receive(request.passOffer, over: connection.channel.channel, ask: ask)
        } catch {
            return failed(error)
        }
        // The client's stdin read here when it can be (a regular file, passed or named), else its records.
        let (passed, piped) = PassedStdio.sources(stdio?.input, named: request.passedInput)
        if passed != nil || piped != nil { NearbyLog.logger.info("a stream's client passed its input: the node reads it itself") }
        if let stdio {
            let which = [stdio.input.map { _ in "stdin" }, stdio.output.map { _ in "stdout" }].compactMap { $0 }.joined(separator: " and ")
            NearbyLog.logger.info("a stream's client passed its \(which): the node reads and writes them itself")
        }
        let source: any ByteSource
        if let passed { source = passed } else if let piped { source = piped } else { source = RecordSource(leftover: rest.0, iterator: rest.1) }
        let records = RecordSink(outbound)
        // Its passed stdout written here; `end` still tells the client, which then closes its copy.
        let output = stdio?.output.map { PassedOutput($0) { await records.finish() } }
        let sink: any ByteSink = output ?? records
        let started = OneShot<Void>()
        let announce: @Sendable (StreamInfo) async -> Void = { info in
            var info = info
            info.readsInput = passed != nil || piped != nil
            info.writesOutput = output != nil ? true : nil
            started.settle(())
            await ready(info)
        }
        // What the client cannot count itself: the bytes of the descriptors the node used.
        let counted: @Sendable (StreamOutcome) -> StreamOutcome = { outcome in
            var outcome = outcome
            outcome.sent = piped?.count
            outcome.received = output?.count
            return outcome
        }
        await withTaskGroup(of: Void.self) { race in
            race.addTask {
                do throws(NearbyError) {
                    _ = try await Requests.serve(request, node: node, asker: .init(events: events, input: source, output: sink, ready: announce))
                    await records.conclude(counted(.done))
                } catch {
                    // Before `streamReady` the client still reads reply lines; after it, records.
                    guard started.isSettled else { return failed(error) }
                    await records.conclude(counted(StreamOutcome(error)))
                }
                // The client closes the connection once it has read the outcome.
                await closed(connection.channel.channel)
            }
            race.addTask { _ = await connection.gone.wait() }
            await race.next()
            race.cancelAll()
        }
        passed?.stop()
        piped?.stop()
        // Each closes its descriptor once its job on the descriptors' pool has left (a turn, a tenth of a second, at most).
        output?.stop()
    }
}
