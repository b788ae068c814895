import Foundation
import NIOCore
import NearbyBase
import NearbyWire
import NearbyTransfer

/// `send`, `send --lines` and `send --unreliable`: the node finds the sessions (inviting first when
/// needed); `MessageDelivery` writes.
extension Node {
    /// The sessions a send goes to: every session (`all`), and the peers named, invited first when needed.
    func sendTargets(_ queries: [String], all: Bool, timeout: Double, client: (any EventSink)?) async throws(NearbyError) -> [Link] {
        var targets: [Link] = []
        if all {
            targets = sessions.all
            guard !targets.isEmpty else { throw .notConnected("any peer (no sessions)") }
        }
        for query in queries {
            let peer = try await invite(query, context: nil, timeout: timeout, client: client)
            guard let link = sessions[peer.id] else { throw .notConnected(query) }
            targets.append(link)
        }
        return targets
    }

    /// Sends one message per line of `source` as each line is read, until the source ends or every
    /// target has left the session (`MessageDelivery`).
    package nonisolated func sendLines(
        from source: any ByteSource, to queries: [String], all: Bool, unreliable: Bool, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let targets = try await sendTargets(queries, all: all, timeout: timeout, client: client)
        try await delivery.sendLines(from: source, to: targets, unreliable: unreliable, client: client)
    }

    /// One message (`send`, `send --unreliable`) to peers, inviting those not connected yet.
    package func sendMessage(
        _ payload: [UInt8], to queries: [String], all: Bool, unreliable: Bool, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let limit = unreliable ? Datagram.maxPayload : Frame.maxPayload
        guard payload.count <= limit else { throw .messageTooLarge(bytes: payload.count, limit: limit) }
        let targets = try await sendTargets(queries, all: all, timeout: timeout, client: client)
        try await delivery.deliver([ByteBuffer(bytes: payload)], to: targets, unreliable: unreliable, client: client, counted: false)
    }

    nonisolated var delivery: MessageDelivery { MessageDelivery(events: events, datagrams: datagrams) }
}
