import ArgumentParser
import Foundation
import NearbyCore
import NIOCore
import NearbyBase
import NearbyControl
import NearbyDiscovery
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Nearby {
    struct Stream: AsyncParsableCommand, NamesAPeer {
        static let configuration = CommandConfiguration(
            abstract: "Pipe stdin to a peer and the peer's bytes to stdout.",
            discussion: """
                Byte-exact both ways and flow-controlled (memory stays bounded whatever the size). \
                EOF on stdin reaches the peer as EOF; the command ends when both sides have ended \
                their input. Events go to stderr (as JSON lines, or lines for people when stderr is a \
                terminal): stdout carries only the peer's bytes. \
                The receiving end runs 'nearby stream --listen' (attached to the running node, or \
                running one itself, which accepts the opener's invitation — without --from from \
                ANYONE on the network, else from --from only). Attached to a node that does not \
                accept by itself, it shows the opener's invitation and the 'nearby accept' that \
                lets the stream in. An incoming stream that nobody \
                listens for is refused after 30 s. A listening node takes streams only, never \
                files. A listener whose stdin is a terminal sends nothing: its side ends at \
                once, so 'nearby stream --listen | tar xz' ends with the opener's bytes (to type \
                to the peer, pipe it: cat | nearby stream --listen). Through a running \
                node, stdin and stdout are handed to the node, which reads and writes them itself \
                rather than copying every byte over its control socket (not a terminal; \
                NEARBY_PASS_FDS=0 turns this off). A stream cut before both sides ended it (the peer killed, the \
                session lost, a reset) exits 5 on both sides, with or without a running node: \
                stream-closed then gives why, never 'done'.

                Examples:
                  tar cz photos | nearby stream "Bob's Pi" --stream photos
                  nearby stream --listen --stream photos < /dev/null | tar xz
                  nearby stream --listen --from "Alice's laptop" < /dev/null | sha256sum
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT (not with --listen).", completion: .peers)
        var peer: String?

        @Option(
            name: .customLong("stream"),
            help: ArgumentHelp("The stream's name (to tell streams apart; --listen takes only that name).", valueName: "name"))
        var streamName: String?

        @Flag(help: "Wait for an incoming stream instead of opening one.")
        var listen = false

        @Option(
            help: ArgumentHelp("With --listen: only a stream from this peer (without it, a stream from anyone).", valueName: "peer"),
            completion: .peers)
        var from: String?

        @OptionGroup var wait: InviteTimeout

        @OptionGroup var node: NodeOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if listen, peer != nil { throw ValidationError("--listen takes no peer (use --from to restrict who may stream)") }
            if !listen, peer == nil { throw ValidationError("name a peer, or use --listen") }
            if !listen, from != nil { throw ValidationError("--from goes with --listen") }
        }

        func run() async throws {
            // stdout carries the stream's bytes: events go to stderr.
            var onStderr = CommandContext.current
            onStderr.events = LineSink(fileDescriptor: STDERR_FILENO)
            let context = output.configure(onStderr, fd: STDERR_FILENO)
            try await CommandContext.$current.withValue(context) {
                try await performNamingThePeer(context, verbose: output.verbose)
            }
        }

        var typedPeer: String? {
            get { listen ? nil : peer }
            set { peer = newValue }
        }

        func perform(_ context: CommandContext) async throws {
            let node = try self.node.resolve(context)
            // A listener's terminal is not input: `stream --listen | tar xz` must end when
            // the opener's bytes do, not wait for a Ctrl-D nobody knows to type.
            let source: any ByteSource = listen && isatty(STDIN_FILENO) == 1 ? NoBytes() as any ByteSource : DescriptorSource(fd: STDIN_FILENO)
            let sink = DescriptorSink(fd: STDOUT_FILENO)
            let (listen, name, from, timeout) = (self.listen, self.streamName, self.from, wait.timeout)
            // A running node may read stdin itself when it is a regular file (ControlRequest).
            let input = PassedInput.standardInput()
            try PeerQuery.check([peer, from])
            let identity = try context.identity()
            let address = NodeAddress(paths: context.paths, environment: context.environment, peerID: identity.peerID, service: node.service)
            // Better still, the node takes our stdin and stdout themselves (SCM_RIGHTS).
            let passing = PassOffer.standard(
                socket: address.socket, environment: context.environment, keepInput: source is NoBytes)
            let request: ControlRequest = listen
                ? .listen(name: name, from: from, input: input, pass: passing?.offer)
                : .stream(peer: peer ?? "", name: name ?? "", timeout: timeout, input: input, pass: passing?.offer)
            let events = context.events
            // Through a running node the client sees the setup events; it reports the end itself.
            let counted = CountedStream(source: source, sink: sink)
            let replies = NodeReplies(events)
            let viaNode = try await interruptible(request.activity) {
                try await ControlClient.stream(
                    request.expecting(node.expecting()), address: address, source: counted, sink: counted,
                    passing: passing?.descriptors ?? []
                ) {
                    replies.print($0)
                }
            }
            switch viaNode {
            case let .ran(info, outcome)?:
                // Cut: the same stream-closed, error and exit status as without a node.
                if let failure = outcome.error {
                    counted.reportClosed(info, outcome, reason: failure.errorDescription ?? "failed", to: events)
                    throw failure
                }
                if info.readsInput == true, outcome.sent == nil, let input { counted.nodeRead(input) }
                return counted.reportClosed(info, outcome, reason: "done", to: events)
            case let .failed(status)?: return try replies.outcome(status)
            case nil: break
            }
            var configuration = node.configuration
            configuration.advertise = listen
            // Listening means taking the opener's invitation: from anyone, or from --from only.
            configuration.autoAccept = listen && from == nil
            configuration.acceptFrom = from.map { [$0] } ?? []
            configuration.acceptedBy = "nearby stream --listen"
            // A listening node is the user's node for this service (it advertises and can be
            // reached by other commands); an opening one is one-shot.
            try await LocalNode.run(
                configuration, identity: identity, context: context, serve: listen,
                stopReason: { stopReason($0, done: "stream finished", failed: "stream failed") }
            ) { local in
                if listen { for event in await local.node.advertisingEvents { events.emit(event) } }
                _ = try await interruptible(request.activity) {
                    try await local.serve(request, asker: .init(input: source, output: sink))
                }
            }

        }

    }
}

/// Counts the bytes of a stream that runs through a running node, for the `stream-closed` this
/// process prints at the end (the node prints its own).
final class CountedStream: ByteSource, ByteSink {
    private let source: any ByteSource
    private let sink: any ByteSink
    private let counts = Locked<(sent: UInt64, received: UInt64)>((0, 0))

    init(source: any ByteSource, sink: any ByteSink) {
        self.source = source
        self.sink = sink
    }

    func next() async throws -> ByteBuffer? {
        let chunk = try await source.next()
        if let chunk { counts.withLock { $0.sent += UInt64(chunk.readableBytes) } }
        return chunk
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await sink.write(buffer)
        counts.withLock { $0.received += UInt64(buffer.readableBytes) }
    }

    func finish() async { await sink.finish() }

    /// The node read our stdin itself, from `input.offset` to the end: count that, and leave stdin
    /// at its end, as if this process had read it (a script may read on after us).
    func nodeRead(_ input: PassedInput) {
        var info = stat()
        guard fstat(STDIN_FILENO, &info) == 0 else { return }
        let end = max(input.offset, UInt64(max(0, info.st_size)))
        counts.withLock { $0.sent += end - input.offset }
        lseek(STDIN_FILENO, off_t(end), SEEK_SET)
    }

    /// `stream-closed` for the stream the node opened for us, with what this process counted, or
    /// the node for the descriptors it read and wrote itself.
    func reportClosed(_ info: StreamInfo, _ outcome: StreamOutcome, reason: String, to events: any EventSink) {
        let (ownSent, ownReceived) = counts.withLock { ($0.sent, $0.received) }
        let (sent, received) = (outcome.sent ?? ownSent, outcome.received ?? ownReceived)
        events.emit(Events.StreamClosed(
            stream: info.stream, peer: info.peer, name: info.name, sent: sent, received: received, reason: reason))
    }
}

/// A listener's input when stdin is a terminal: nothing, so its side of the stream ends at once.
struct NoBytes: ByteSource {
    func next() async throws -> ByteBuffer? { nil }
}
