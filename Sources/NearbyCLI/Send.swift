import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyControl
import NearbyDiscovery
import NearbyWire
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Nearby {
    struct Send: AsyncParsableCommand, NamesAPeer {
        static let configuration = CommandConfiguration(
            abstract: "Send a message to a peer (or --all).",
            discussion: """
                Reliable and in order. TEXT, or stdin when there is no TEXT; at most 1 MiB. Stdin is \
                sent byte for byte, its trailing newline included (`echo hi` sends "hi\\n"; TEXT or \
                --lines leave it out). The \
                receiver prints a 'message' event: UTF-8 as "text", anything else as base64 "data". \
                A peer not connected yet is invited first. With a node running, the node sends; \
                without one, a one-shot node finds the peer, invites it, sends, and leaves.

                With --lines, each line of stdin is one message (without its newline), sent as soon \
                as it is read, until stdin ends: the command keeps running while stdin stays open. \
                With --unreliable, each message is one UDP datagram, sealed with a key agreed in the \
                session: it arrives intact or not at all, at most once, in no promised order, and at \
                most 1200 bytes (a larger one is an error, exit 64). The receiver's 'message' says \
                "reliable": false. Nobody learns of a lost datagram.

                Examples:
                  nearby send "Bob's Pi" "build finished"
                  date | nearby send 09okw
                  nearby send --all "dinner is ready"
                  tail -f app.log | nearby send --lines ops
                  journalctl -f | nearby send --lines --all
                  nearby send --unreliable "Bob's Pi" "cursor 120,40"
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT.", completion: .peers)
        var peer: String?

        @Argument(help: "The message (default: stdin).")
        var text: String?

        @Flag(help: "Send to every connected peer (needs a running node).")
        var all = false

        @Flag(help: "Each line of stdin is one message, sent as soon as it is read.")
        var lines = false

        @Flag(help: "Unreliable delivery, as MPC's .unreliable: UDP datagrams of at most 1200 bytes.")
        var unreliable = false

        @OptionGroup var wait: InviteTimeout

        @OptionGroup var node: NodeOptions
        @OptionGroup var localSend: LocalSendOptions
        @OptionGroup var localSendPIN: LocalSendPIN
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if !all, peer == nil { throw ValidationError("name a peer, or use --all") }
            if all, peer != nil, text != nil { throw ValidationError("--all takes no peer: nearby send --all [TEXT]") }
            if lines, text != nil || (all && peer != nil) { throw ValidationError("--lines reads stdin: give no TEXT") }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await performNamingThePeer(context, verbose: output.verbose)
        }

        var typedPeer: String? {
            get { all ? nil : peer }
            set { peer = newValue }
        }

        func perform(_ context: CommandContext) async throws {
            if localSend.enabled(context) {
                guard let peer, !all, !lines, !unreliable else {
                    throw NearbyError.invalidArgument("--localsend sends one text to one device: it does not go with --all, --lines or --unreliable")
                }
                let message = try text ?? String(decoding: readStandardInput(limit: Frame.maxPayload), as: UTF8.self)
                return try await LocalSendCommands.sendText(
                    context, peer: peer, text: message, pin: localSendPIN.pin, timeout: wait.timeout, given: wait.given, name: try node.naming.resolve())
            }
            let node = try self.node.resolve(context)
            // With --all the one positional argument is the text.
            let target = all ? nil : peer
            let message = all ? (peer ?? text) : text
            let limit = unreliable ? Datagram.maxPayload : Frame.maxPayload
            let payload = lines ? [] : try message.map { Array($0.utf8) } ?? readStandardInput(limit: limit)
            if payload.count > limit { throw NearbyError.messageTooLarge(bytes: payload.count, limit: limit) }
            let timeout = wait.timeout
            let peers = target.map { [$0] } ?? []
            // One request, whichever node carries it out.
            let request: ControlRequest = lines
                ? .sendLines(peers: peers, all: all, timeout: timeout, unreliable: unreliable)
                : unreliable
                ? .sendDatagram(peers: peers, all: all, timeout: timeout, payload: Data(payload))
                : .send(peers: peers, all: all, timeout: timeout, payload: Data(payload))
            // The lines of stdin, read as they come (the running node's, or our own node's input).
            let input = DescriptorSource(fd: STDIN_FILENO, chunk: 64 << 10)
            if lines {
                try PeerQuery.check(request.namedPeers)
                let identity = try context.identity()
                let address = NodeAddress(paths: context.paths, environment: context.environment, peerID: identity.peerID, service: node.service)
                let replies = NodeReplies(context.events)
                let checked = request.expecting(node.expecting())
                if let status = try await ControlClient.sendLines(checked, address: address, source: input, output: { replies.print($0) }) {
                    return try replies.outcome(status)
                }
            } else if try await context.viaRunningNode(request, service: node.service, expecting: node.expecting()) != nil {
                return
            }
            guard target != nil else { throw NearbyError.noNode("--all sends to the sessions of a running node") }

            let (lines, unreliable) = (self.lines, self.unreliable)
            try await LocalNode.run(
                node.configuration, identity: context.identity(), context: context, serve: false,
                stopReason: { stopReason($0, done: lines ? "input ended" : unreliable ? "message sent" : "message delivered") }
            ) { local in
                _ = try await interruptible(request.activity) {
                    try await local.serve(request, asker: .init(input: lines ? input : nil))
                }
            }

        }


        /// Reads stdin to the end, refusing more than `limit` bytes. read(2) itself, not
        /// FileHandle's `read(upToCount:)`, which goes on reading after a terminal's Ctrl-D until it
        /// has the whole count: one Ctrl-D (on an empty line) ends the message, as with `cat`.
        private func readStandardInput(limit: Int) throws(NearbyError) -> [UInt8] {
            if isatty(STDIN_FILENO) == 1 {
                Nearby.writeStandardError("nearby: type the message, then Ctrl-D on a new line to send it (or give it as TEXT)\n")
            }
            var data = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count < 0 { throw .ioFailure(path: "stdin", reason: String(cString: strerror(errno))) }
                if count == 0 { return data }
                data.append(contentsOf: chunk.prefix(count))
                if data.count > limit { throw .messageTooLarge(bytes: data.count, limit: limit) }
            }
        }
    }

    /// A line for the person at the terminal, outside the events.
    private static func writeStandardError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    struct Disconnect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Leave the session with a peer, or with --all.",
            discussion: """
                Needs a running node (exit 6 otherwise). The peer sees 'disconnected' with the reason \
                at once.

                Examples:
                  nearby disconnect "Bob's Pi"
                  nearby disconnect --all
                """)

        @Argument(help: "The peer: ID, ID prefix or display name.", completion: .peers)
        var peer: String?

        @Flag(help: "Every connected peer.")
        var all = false

        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if all == (peer != nil) { throw ValidationError("name a peer, or use --all") }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                let service = try serviceOptions.resolve(context)
                guard try await context.viaRunningNode(.disconnect(peer: peer, all: all), service: service) != nil else {
                    throw NearbyError.noNode("nothing to disconnect")
                }
            }
        }
    }
}
