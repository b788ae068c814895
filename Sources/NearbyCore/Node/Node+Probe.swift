import Foundation
import NearbyBase
import NearbyWire

/// `nearby doctor` on another host asks, after the handshake and instead of an invitation, whether
/// this host sees its `_nearby-doctor._tcp` instance. The node browses that fixed type for at most
/// `configuration.probeWait`, answers `probeReply` as soon as it knows, and closes the link. Bounds
/// for a hostile prober: one probe per link (the state machine), the handshake caps before it,
/// at most `DoctorProbe.slots` probes browsing at once, and the wait. Nobody's user sees an event:
/// a debug log line only. Called from one line in `Node.perform`.
extension Node {
    package func probed(_ probe: FrameBody.Probe, on link: Link) {
        NearbyLog.logger.debug("\(link.peer.id) (\(link.peer.name)) at \(link.peer.address) runs nearby doctor: does this host see \(probe.instance)?")
        let wait = configuration.probeWait
        spawn {
            let reply = await DoctorProbe.reply(to: probe.instance, within: wait)
            NearbyLog.logger.debug("doctor probe \(probe.instance) from \(link.peer.id): \(reply.seen ? "seen" : "not seen") after \(reply.waited) ms")
            await link.answerProbe(reply)
        }
    }
}
