import NIOHTTP1
import NearbyHTTP

/// What a `LocalSendServer` answers with: the receiving node's routes (`LocalSendReceiver`), or
/// only discovery's (`RegisterRoutes`) while browsing.
package protocol LocalSendRoutes: Sendable {
    func handle(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer
    /// A sender whose certificate has this fingerprint is known (pinned): its connections are not
    /// counted as a stranger's (`Admission`).
    func knows(fingerprint: String) async -> Bool
}

extension LocalSendRoutes {
    package func knows(fingerprint: String) async -> Bool { false }
}

extension LocalSendReceiver: LocalSendRoutes {
    package nonisolated func knows(fingerprint: String) async -> Bool { known.knows(fingerprint: fingerprint) }
}

/// The routes a browsing command serves (browse, send, doctor): official LocalSend apps (1.18 on)
/// answer an announcement only with `POST /register` to the port it names, never over UDP, so a
/// device that does not announce itself meanwhile is heard only here. Each register is a sighting
/// (the sender's address, the port and protocol it says it serves); one whose TLS certificate is
/// not the fingerprint it claims is ignored, as the official app does. Nothing else is taken.
struct RegisterRoutes: LocalSendRoutes {
    /// Our own info, the answer to `register` and `info`.
    let me: DeviceMessage
    let heard: @Sendable (LocalSendDevice) -> Void

    func handle(_ request: LocalSendRequest, body: HTTPBody) async -> LocalSendAnswer {
        let prefix = LocalSendDefaults.apiPrefix
        switch (request.method, request.path) {
        case (.GET, prefix + "/info"), (.GET, "/api/localsend/v1/info"):
            return LocalSendAnswer(status: 200, body: me.encoded())
        case (.POST, prefix + "/register"):
            guard let bytes = try? await body.whole(limit: LocalSendLimits.datagramBytes) else { return .status(413, keepAlive: false) }
            if let message = DeviceMessage.decode(bytes, limit: LocalSendLimits.datagramBytes) {
                let device = LocalSendDevice(message, host: request.host, interface: nil)
                if request.clientFingerprint.map({ LocalSendIdentity.sameFingerprint($0, device.fingerprint) }) ?? true { heard(device) }
            }
            return LocalSendAnswer(status: 200, body: me.encoded())
        default:
            return .status(404, keepAlive: false)
        }
    }
}
