import ArgumentParser
import Foundation
import NearbyCore
import NearbyBase
import NearbyDiscovery
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A peer name that names nobody but comes near a name on the link (`'Bobs Pi'` for `Bob's Pi`),
/// for every command that takes a PEER (send, send-file, stream, invite): one way for all of them.
/// At a terminal (stdin and stderr both one) the person is asked, as soon as the lookup sees the
/// near name, "did you mean 'Bob's Pi'? [y/N]": yes runs the same command for that peer at once,
/// anything else keeps looking for the name as typed. In a pipe nothing is asked and nothing
/// guessed: the name stays exact and waits its --timeout. Either way a lookup that ends unfound
/// with a near name seen says the corrected command (`nearby send "Bob's Pi" hi`) instead of doctor.
enum PeerNaming {
    /// Runs `body` for `peer`, and once more for the near name the person chose instead.
    static func run(
        _ context: CommandContext, peer: String?, _ body: @escaping @Sendable (CommandContext, String?) async throws -> Void
    ) async throws {
        guard let peer else { return try await body(context, nil) }
        let arguments = Array(CommandLine.arguments.dropFirst())
        let asking = isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1
        let watch = Watch(context.events, query: peer, arguments: arguments)
        var watched = context
        watched.events = watch
        do {
            guard asking else { return try await body(watched, peer) }
            guard let chosen = try await firstOrChosen(watched, peer: peer, watch: watch, body) else { return }
            var again = context
            again.events = Watch(context.events, query: chosen, arguments: arguments)
            try await body(again, chosen)
        } catch let error as NearbyError {
            throw watch.retyped(error)
        } catch let failure as ReportedFailure {
            throw watch.retyped(failure)
        }
    }

    /// The body's own end; or, when the person takes the near name before that, the name.
    private static func firstOrChosen(
        _ context: CommandContext, peer: String, watch: Watch, _ body: @escaping @Sendable (CommandContext, String?) async throws -> Void
    ) async throws -> String? {
        try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await body(context, peer)
                return nil
            }
            group.addTask {
                guard let near = await watch.near.wait() else { return await never() }
                let name = near.name ?? near.id
                let label = near.name.map { "'\(TerminalText.escaped($0, limit: 80))' (\(near.id.prefix(8)))" } ?? near.id
                let prompt = "nearby: no peer is called '\(TerminalText.escaped(peer, limit: 80))' yet; did you mean \(label)? [y/N] "
                FileHandle.standardError.write(Data(prompt.utf8))
                switch await answer(until: watch.lookupOver) {
                case true?: return name
                case false?:
                    FileHandle.standardError.write(Data("nearby: still looking for '\(TerminalText.escaped(peer, limit: 80))'\n".utf8))
                    return await never()
                case nil:
                    FileHandle.standardError.write(Data("\n".utf8))
                    return await never()
                }
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let chosen = next { return chosen }
                return nil
            }
            return nil
        }
    }

    /// Suspends until cancelled (the other task's end cancels it), then gives no name.
    private static func never() async -> String? {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        return nil
    }

    /// The person's answer: a line beginning with y; nil when the lookup got past the name first
    /// (nothing more is read from a stdin that may be the command's data) or the task is cancelled.
    private static func answer(until over: OneShot<Void>) async -> Bool? {
        try? await Blocking.run { cancellation -> Bool? in
            var line = [UInt8]()
            while !cancellation.isCancelled, !over.isSettled {
                guard Blocking.ready(STDIN_FILENO, for: Int16(POLLIN)) else { continue }
                var byte: UInt8 = 0
                let count = read(STDIN_FILENO, &byte, 1)
                if count < 0, errno == EINTR { continue }
                if count <= 0 || byte == UInt8(ascii: "\n") { break }
                if line.count < 64 { line.append(byte) }
            }
            if cancellation.isCancelled || over.isSettled { return nil }
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
            return text == "y" || text == "yes"
        } ?? nil
    }

    /// `arguments` with the first one that is `query` replaced by `name`, as a shell line.
    static func command(_ arguments: [String], query: String, name: String) -> String? {
        guard let index = arguments.firstIndex(of: query) else { return nil }
        var retyped = arguments
        retyped[index] = name
        return (["nearby"] + retyped.map(shellWord)).joined(separator: " ")
    }

    /// One shell word: as it is when plain, in double quotes when only `'` or spaces need it
    /// (`"Bob's Pi"`), else in single quotes.
    static func shellWord(_ text: String) -> String {
        let quoted = PeerSearchReport.shellQuoted(text)
        guard quoted != text else { return text }
        let special = Set("\"$`\\!".unicodeScalars)
        return text.unicodeScalars.contains(where: special.contains) || text.unicodeScalars.contains(where: { $0.value < 0x20 })
            ? quoted : "\"" + text + "\""
    }
}

extension PeerNaming {
    /// The command's events on their way out: the first near name a lookup reports (`looking`), the
    /// moment the lookup is past (`connecting`, `invited`, `connected`), and a running node's
    /// final not-found error with the corrected command in it.
    final class Watch: EventSink {
        let inner: any EventSink
        let query: String
        let arguments: [String]
        let near = OneShot<PeerRef>()
        let lookupOver = OneShot<Void>()
        private let seen = Locked<[PeerRef]>([])

        init(_ inner: any EventSink, query: String, arguments: [String]) {
            self.inner = inner
            self.query = query
            self.arguments = arguments
        }

        func emit(_ body: some EventBody) {
            if let failure = body as? Events.Failure { return inner.emit(retyped(failure)) }
            noticed(body)
            inner.emit(body)
        }

        func emitLine(_ line: String) {
            let kinds: [any EventBody.Type] = [Events.Looking.self, Events.Failure.self, Events.Connecting.self, Events.Invited.self, Events.Connected.self]
            guard let body = DecodedEvent(line: line, kinds: kinds)?.body else { return inner.emitLine(line) }
            if let failure = body as? Events.Failure {
                let changed = retyped(failure)
                return changed.hint == failure.hint ? inner.emitLine(line) : inner.emit(changed)
            }
            noticed(body)
            inner.emitLine(line)
        }

        private func noticed(_ body: any EventBody) {
            switch body {
            case let looking as Events.Looking where looking.peer == query:
                guard let closest = Self.closest(looking.near ?? [], to: query) else { return }
                seen.withLock { $0 = looking.near ?? [] }
                near.settle(closest)
            case is Events.Connecting, is Events.Invited, is Events.Connected:
                lookupOver.settle(())
            default: break
            }
        }

        /// Of the near names, the one fewest letters off `query`; none when two peers carry that
        /// name (twins: the corrected command would be as ambiguous, so doctor's hint stays).
        static func closest(_ peers: [PeerRef], to query: String) -> PeerRef? {
            guard let best = peers.min(by: { NearName.distance(query, $0.name ?? $0.id) < NearName.distance(query, $1.name ?? $1.id) })
            else { return nil }
            let label = best.name ?? best.id
            guard Set(peers.filter { ($0.name ?? $0.id) == label }.map(\.id)).count == 1 else { return nil }
            return best
        }

        /// The corrected command for the closest of `near` (or of the names the lookup showed).
        func correction(_ near: [PeerRef]?) -> String? {
            let candidates = (near?.isEmpty == false ? near : nil) ?? seen.withLock { $0 }
            guard let closest = Self.closest(candidates, to: query) else { return nil }
            return PeerNaming.command(arguments, query: query, name: closest.name ?? closest.id)
        }

        func retyped(_ error: NearbyError) -> NearbyError {
            guard case .peerNotFound(let asked, let waited, var seen?) = error, asked == query, let command = correction(seen.near) else { return error }
            seen.retyped = command
            return .peerNotFound(asked, waitedSeconds: waited, seen: seen)
        }

        /// A running node's `peer-not-found`: its doctor hint, in the hint and in the sentence,
        /// becomes the corrected command.
        func retyped(_ failure: Events.Failure) -> Events.Failure {
            seen.withLock { if $0.isEmpty { $0 = failure.near ?? [] } }
            guard failure.code == "peer-not-found", let hint = failure.hint,
                  let command = correction(failure.near), command != hint
            else { return failure }
            var changed = failure
            changed.hint = command
            let old = "next: `\(hint)`", new = "did you mean `\(command)`?"
            changed.message = failure.message.contains(old) ? failure.message.replacingOccurrences(of: old, with: new) : failure.message + "; " + new
            return changed
        }

        func retyped(_ failure: ReportedFailure) -> ReportedFailure {
            guard let command = correction(nil), failure.status == ExitStatus.peerNotFound.rawValue, !failure.message.contains(command) else {
                return failure
            }
            let message = failure.message.range(of: "; next: `").map { String(failure.message[..<$0.lowerBound]) } ?? failure.message
            return ReportedFailure(status: failure.status, message: message + "; did you mean `\(command)`?")
        }
    }
}

/// A command that names one peer (send, send-file, stream, invite): it runs through PeerNaming,
/// and for a near name the person chose, the same command again with that name.
protocol NamesAPeer: Sendable {
    /// The peer as typed, or nil where the command names none (`--all`, `--listen`, `--web`);
    /// set to the name the person chose instead.
    var typedPeer: String? { get set }
    func perform(_ context: CommandContext) async throws
}

extension NamesAPeer {
    /// The same command for `name` instead of the peer typed, when the person chose it.
    func renamed(_ name: String) -> Self {
        var copy = self
        copy.typedPeer = name
        return copy
    }

    /// Runs the command (or its renamed self) inside `reporting`, in `context`.
    func performNamingThePeer(_ context: CommandContext, verbose: Bool) async throws {
        let command = self
        try await reporting(context, verbose: verbose) {
            try await PeerNaming.run(context, peer: typedPeer) { context, named in
                try await (named.map(command.renamed) ?? command).perform(context)
            }
        }
    }
}
