import ArgumentParser
import Foundation
import NearbyCore
import NearbyWeb
import NearbyBase
import NearbyDiscovery
import NearbyTransfer

extension Nearby {
    struct SendFile: AsyncParsableCommand, NamesAPeer {
        static let configuration = CommandConfiguration(
            commandName: "send-file",
            abstract: "Send files and directories to a peer.",
            discussion: """
                Directories go recursively, their relative paths kept, empty directories made \
                on the receiving side too (after the files, with no event); what they hold that is \
                not a file (a FIFO, a device, a socket, a symbolic link) is not sent, each with a \
                'skipped' event saying why. Prints 'file-started', \
                'progress' (at most 10 a second per file) and 'file-sent' with the SHA-256 the \
                receiver confirmed; the receiver's node prints the same with 'file-received' and \
                puts each file in its --save-dir under a name that overwrites nothing \
                ('name (1).ext'), only once the SHA-256 matches; a file whose complete copy is \
                already there (same name, same size, same SHA-256: the receiver says the hash of \
                its copy, the sender compares it with its own) is not sent at all, and both sides \
                report 'already_there' with every byte 'skipped'. When the link goes mid-file (Wi-Fi drops, the receiver's node restarts), the command \
                keeps the file, gets the peer back (where it was reached, then wherever discovery shows \
                it) and goes on from what the receiver kept ('reconnecting', 'resumed'), for up to \
                --retry-for seconds of outage; after that it fails (exit 5), and sending the same file \
                again resumes where it stopped. Ctrl-C cancels. A progress bar is drawn \
                on stderr when it is a terminal, and replaced by a summary line when a file is done. Without a running node, a one-shot node finds the \
                peer, invites it, sends and leaves: 'nearby accept --save-dir DIR' on the other machine is all it \
                takes.

                Examples:
                  nearby send-file "Bob's Pi" report.pdf
                  nearby send-file 09okw photos/ notes.txt
                  nearby send-file 192.168.1.20:39339 backup.tar

                With --web, every argument is a file or directory to serve to browsers on the LAN: \
                a 'web-serving' event gives the page's address (url, and urls: one per address of \
                this host) with a secret token, and a QR code of it is drawn on stderr at a terminal. \
                The page lists the files with their sizes; a directory downloads as one .zip; \
                interrupted downloads resume (Range). Each download ends with a 'web-download' \
                event; the command exits 0 once every file was downloaded whole (--keep: serves \
                until Ctrl-C, or --timeout seconds). --timeout without --keep: not every file \
                downloaded in time is a failure.
                  nearby send-file --web report.pdf photos/
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT (with --web: the first path).", completion: .peers)
        var peer: String

        @Argument(help: "Files or directories to send.", completion: .file())
        var paths: [String] = []

        @OptionGroup var wait: InviteTimeout

        @Option(help: ArgumentHelp("How long a link that goes mid-file is tried again before the transfer fails (0: never).", valueName: "seconds"))
        var retryFor: Double = RetryPolicy.defaultBound

        @OptionGroup var node: NodeOptions
        @OptionGroup var localSend: LocalSendOptions
        @OptionGroup var localSendPIN: LocalSendPIN
        @OptionGroup var web: WebOptions

        @Flag(help: "With --web: keep serving after every file was downloaded (until Ctrl-C or --timeout).")
        var keep = false

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if paths.isEmpty, !web.web { throw ValidationError("name at least one file or directory to send") }
            if keep, !web.web { throw ValidationError("--keep is for --web") }
            if web.web, localSend.localsend { throw ValidationError("--web and --localsend are two different ways to send: choose one") }
            if !(0...86_400).contains(retryFor) { throw ValidationError("--retry-for takes 0 to 86400 seconds") }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await performNamingThePeer(context, verbose: output.verbose)
        }

        var typedPeer: String? {
            get { web.web ? nil : peer }
            set { if let newValue { peer = newValue } }
        }

        func perform(_ context: CommandContext) async throws {
            if web.web {
                return try await WebCommands.share(
                    context, paths: [peer] + paths, device: try node.naming.resolve() ?? context.identity().displayName, keep: keep,
                    timeout: wait.given)
            }
            if localSend.enabled(context) {
                return try await LocalSendCommands.sendFiles(
                    context, peer: peer, paths: paths, pin: localSendPIN.pin, timeout: wait.timeout, given: wait.given, name: try node.naming.resolve())
            }
            let node = try self.node.resolve(context)
            try PeerQuery.check([peer])
            // Missing or unreadable files are refused before anything touches the network.
            // What a directory holds that is not a file is said, not dropped in silence.
            let files = try FileList.collect(paths) { context.events.emit(Events.Skipped($0)) }
            let (peer, timeout) = (self.peer, wait.timeout)
            let request = ControlRequest.sendFiles(peer: peer, files: files, timeout: timeout, retryFor: retryFor)
            if try await context.viaRunningNode(request, service: node.service, expecting: node.expecting()) != nil { return }
            let configuration = node.configuration
            try await LocalNode.run(
                configuration, identity: context.identity(), context: context, serve: false,
                stopReason: { stopReason($0, done: "files delivered", failed: "transfer stopped") }
            ) { local in
                _ = try await interruptible(request.activity) { try await local.serve(request) }
            }

        }

    }
}
