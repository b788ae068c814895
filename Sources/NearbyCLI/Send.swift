import ArgumentParser
import Foundation
import NearbyCore

extension Nearby {
    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a message to a peer (or --all).",
            discussion: """
                Reliable and in order. TEXT, or stdin when there is no TEXT; at most 1 MiB. The \
                receiver prints a 'message' event: UTF-8 as "text", anything else as base64 "data". \
                A peer not connected yet is invited first. With a node running, the node sends; \
                without one, a one-shot node finds the peer, invites it, sends, and leaves.

                Examples:
                  nearby send "Bob's Pi" "build finished"
                  date | nearby send 09okw
                  nearby send --all "dinner is ready"
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT.", completion: .peers)
        var peer: String?

        @Argument(help: "The message (default: stdin).")
        var text: String?

        @Flag(help: "Send to every connected peer (needs a running node).")
        var all = false

        @Flag(help: "Unreliable delivery, as MPC's .unreliable (not built yet: exits 11).")
        var unreliable = false

        @OptionGroup var wait: InviteTimeout

        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var session: SessionOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if !all, peer == nil { throw ValidationError("name a peer, or use --all") }
            if all, peer != nil, text != nil { throw ValidationError("--all takes no peer: nearby send --all [TEXT]") }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                if unreliable { throw NearbyError.notImplemented(command: "send --unreliable") }
                let service = try serviceOptions.resolve(context)
                // With --all the one positional argument is the text.
                let target = all ? nil : peer
                let message = all ? (peer ?? text) : text
                let payload = try message.map { Array($0.utf8) } ?? readStandardInput(limit: Frame.maxPayload)
                let timeout = wait.timeout
                let request = ControlRequest.send(peers: target.map { [$0] } ?? [], all: all, timeout: timeout, payload: Data(payload))
                if let status = try await context.viaRunningNode(request, service: service) { return try exitWith(status) }
                guard let target else { throw NearbyError.noNode("--all sends to the sessions of a running node") }

                var configuration = NodeConfiguration(service: service)
                configuration.encryption = session.encryption
                try await LocalNode.run(
                    configuration, identity: context.identity(), context: context, serve: false,
                    stopReason: { stopReason($0, done: "message delivered") }
                ) { local in
                    try await interruptible("sending to \(target)") {
                        try await local.node.send(payload, to: [target], all: false, timeout: timeout, client: nil)
                    }
                }
            }
        }

        /// Reads stdin to the end, refusing more than `limit` bytes.
        private func readStandardInput(limit: Int) throws(NearbyError) -> [UInt8] {
            var data = [UInt8]()
            while let chunk = try? FileHandle.standardInput.read(upToCount: 64 << 10), !chunk.isEmpty {
                data.append(contentsOf: chunk)
                if data.count > limit { throw .messageTooLarge(bytes: data.count, limit: limit) }
            }
            return data
        }
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
                guard let status = try await context.viaRunningNode(.disconnect(peer: peer, all: all), service: service) else {
                    throw NearbyError.noNode("nothing to disconnect")
                }
                try exitWith(status)
            }
        }
    }
}
