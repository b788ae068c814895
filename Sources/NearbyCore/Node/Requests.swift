import NIOCore
import NearbyBase
import NearbyDiscovery
import NearbyWire
import NearbyTransfer

/// The one place each request is carried out, whoever asked: a client of a running node (over the
/// control socket, `ControlServer`) or the command that started this node in its own process. So a
/// command's failures, options and events are the same both ways; only where the node lives differs.
package enum Requests {
    /// The one who asked, as the request meets it.
    package struct Asker: Sendable {
        /// Its copy of the work's events; nil when the node's own output is the asker's (in process).
        package var events: (any EventSink)?
        /// Its input: the lines of `send --lines`, a stream's bytes to the peer.
        package var input: (any ByteSource)?
        /// Where a stream's bytes from the peer go.
        package var output: (any ByteSink)?
        /// A stream is set up: its bytes flow from now on.
        package var ready: @Sendable (StreamInfo) async -> Void

        package init(
            events: (any EventSink)? = nil, input: (any ByteSource)? = nil, output: (any ByteSink)? = nil,
            ready: @escaping @Sendable (StreamInfo) async -> Void = { _ in }
        ) {
            self.events = events
            self.input = input
            self.output = output
            self.ready = ready
        }
    }

    /// What a request came to, for a command that goes on after it (stays in the session, reports a stream).
    package enum Served: Sendable {
        case done
        /// `invite`, `accept`: the peer now in session (nil: declined, or nothing to accept).
        case peer(AuthenticatedPeer?)
        case stream(StreamSummary)
    }

    /// The request a running node serves for a client: its expectations checked (the one place
    /// they are), then the request itself.
    static func checked(_ request: ControlRequest, by node: Node) async throws(NearbyError) -> ControlRequest {
        guard case let .expecting(expected, inner) = request else { return request }
        if let conflict = expected.conflict(running: node.configuration, as: node.displayName) { throw conflict }
        return try await checked(inner, by: node)
    }

    package static func serve(_ request: ControlRequest, node: Node, asker: Asker) async throws(NearbyError) -> Served {
        try PeerQuery.check(request.namedPeers)
        let client = asker.events
        switch request {
        case let .invite(peer, context, timeout):
            return .peer(try await node.invite(peer, context: context, timeout: timeout, client: client))
        case let .accept(query, decline, timeout):
            return .peer(try await node.accept(query, decline: decline, timeout: timeout, client: client))
        case let .send(peers, all, timeout, payload):
            try await node.sendMessage(Array(payload), to: peers, all: all, unreliable: false, timeout: timeout, client: client)
        case let .sendDatagram(peers, all, timeout, payload):
            try await node.sendMessage(Array(payload), to: peers, all: all, unreliable: true, timeout: timeout, client: client)
        case let .disconnect(peer, all):
            _ = try await node.disconnect(peer, all: all, client: client)
        case let .sendFiles(peer, files, timeout, retryFor):
            try await node.sendFiles(files, to: peer, timeout: timeout, retryFor: retryFor, client: client)
        case let .sendLines(peers, all, timeout, unreliable):
            guard let input = asker.input else { throw .invalidArgument("\(Spelling.command(.sendLines)) needs its input") }
            try await node.sendLines(from: input, to: peers, all: all, unreliable: unreliable, timeout: timeout, client: client)
        case let .listen(name, from, _, _):
            guard let input = asker.input, let output = asker.output else { throw .invalidArgument("a stream needs its input and output") }
            return .stream(try await node.listenForStream(name: name, from: from, source: input, sink: output, client: client, ready: asker.ready))
        case let .stream(peer, name, timeout, _, _):
            guard let input = asker.input, let output = asker.output else { throw .invalidArgument("a stream needs its input and output") }
            return .stream(try await node.openStream(
                to: peer, name: name, timeout: timeout, source: input, sink: output, client: client, ready: asker.ready))
        case .expecting:
            // Only a running node is asked with expectations, and it checks them first (`checked`).
            let inner = try await checked(request, by: node)
            return try await serve(inner, node: node, asker: asker)
        }
        return .done
    }
}

extension ControlRequest {
    /// Every PEER the request names, for `PeerQuery.check`: an empty one is refused before any work,
    /// by a running node as by the command itself.
    package var namedPeers: [String?] {
        switch self {
        case let .invite(peer, _, _), let .sendFiles(peer, _, _, _), let .stream(peer, _, _, _, _): [peer]
        case let .accept(query, _, _): [query]
        case let .disconnect(peer, _): [peer]
        case let .listen(_, from, _, _): [from]
        case let .send(peers, _, _, _), let .sendLines(peers, _, _, _), let .sendDatagram(peers, _, _, _): peers
        case let .expecting(_, request): request.namedPeers
        }
    }
}
