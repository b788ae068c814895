import ArgumentParser
import Foundation
import NearbyCore

extension Nearby {
    struct SendFile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "send-file",
            abstract: "Send files and directories to a peer.",
            discussion: """
                Directories go recursively, their relative paths kept. Prints 'file-started', \
                'progress' (at most 10 a second per file) and 'file-sent' with the SHA-256 the \
                receiver confirmed; the receiver's node prints the same with 'file-received' and \
                puts each file in its --save-dir under a name that overwrites nothing \
                ('name (1).ext'), only once the SHA-256 matches. Sending the same file again after \
                an interruption resumes where it stopped. Ctrl-C cancels. A progress bar is drawn \
                on stderr when it is a terminal. Without a running node, a one-shot node finds the \
                peer, invites it, sends and leaves: 'nearby accept' on the other machine is all it \
                takes.

                Examples:
                  nearby send-file "Bob's Pi" report.pdf
                  nearby send-file 09okw photos/ notes.txt
                  nearby send-file 192.168.1.20:39339 backup.tar
                """)

        @Argument(help: "The peer: ID, ID prefix, display name, or HOST:PORT.", completion: .peers)
        var peer: String

        @Argument(help: "Files or directories to send.", completion: .file())
        var paths: [String] = []

        @OptionGroup var wait: InviteTimeout

        @OptionGroup var serviceOptions: ServiceOptions
        @OptionGroup var session: SessionOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if paths.isEmpty { throw ValidationError("name at least one file or directory to send") }
        }

        func run() async throws {
            let context = CommandContext.current
            let display = ProgressDisplay(events: context.events, verbose: output.verbose)
            try await reporting(context, verbose: output.verbose) {
                let service = try serviceOptions.resolve(context)
                // Missing or unreadable files are refused before anything touches the network.
                let files = try FileList.collect(paths)
                var request = ControlRequest(op: .sendFile)
                request.peers = [peer]
                request.files = files
                request.timeout = wait.timeout
                let client = CommandContext(events: display, environment: context.environment, hostName: context.hostName)
                if let status = try await client.viaRunningNode(request, service: service) {
                    display.finish()
                    return try exitWith(status)
                }
                var configuration = NodeConfiguration(service: service)
                configuration.encryption = session.encryption
                let local = try await LocalNode.start(configuration, identity: context.identity(), context: client, serve: false)
                let outcome: Result<Void, NearbyError> = await withTaskGroup(of: Result<Void, NearbyError>?.self) { group in
                    group.addTask {
                        do throws(NearbyError) {
                            try await local.node.sendFiles(files, to: peer, timeout: wait.timeout, client: nil)
                            return .success(())
                        } catch {
                            return .failure(error)
                        }
                    }
                    group.addTask {
                        _ = await TerminationSignal.next()
                        return nil
                    }
                    let first = await group.next() ?? nil
                    group.cancelAll()
                    // Cancelled by a signal: let the sender say so to the receiver.
                    if first == nil { return await group.next().flatMap { $0 } ?? .failure(.cancelled("sending")) }
                    return first ?? .failure(.cancelled("sending"))
                }
                display.finish()
                await local.stop(reason: outcome.isSuccess ? "files delivered" : "transfer stopped")
                try outcome.get()
            }
        }
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
