import Synchronization
import NearbyBase

/// Where a send goes: a device found by discovery (its fingerprint known from its announcement),
/// or an address given as `HOST:PORT` / `HOST` (its fingerprint learnt from the certificate it shows).
package struct LocalSendTarget: Sendable {
    package var host: String
    package var port: Int
    package var https: Bool
    /// Nil until known: an address given by hand shows its certificate first.
    package var fingerprint: String?
    package var ref: PeerRef

    package init(_ device: LocalSendDevice) {
        host = device.host
        port = device.port
        https = device.https
        fingerprint = device.fingerprint
        ref = device.ref
    }

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
        https = true
        fingerprint = nil
        ref = PeerRef(id: "\(host):\(port)", name: nil)
    }

    /// An address given by hand, asked who it is (`GET /info`), over HTTPS and, when what answers
    /// there does not speak TLS, over plain HTTP (a device with encryption off, as the official app
    /// finds one: with the port and protocol it was given). Over HTTPS its fingerprint is the
    /// certificate it shows, which every later request of the transfer must show again; over HTTP
    /// it is only the claim in its answer (the official app's rule too: nothing can be checked).
    /// When it does not answer, the address as it is (the transfer's own requests will say why).
    package static func asking(host: String, port: Int, http: LocalSendHTTP) async -> LocalSendTarget {
        var target = LocalSendTarget(host: host, port: port)
        guard let (response, https) = await http.eitherWay(
            host: host, port: port, method: .GET, path: LocalSendDefaults.apiPrefix + "/info", body: .none, timeout: .seconds(5))
        else { return target }
        let message = DeviceMessage.decode(response.body, limit: LocalSendLimits.jsonBodyBytes, needsFingerprint: false)
        guard let fingerprint = https ? response.fingerprint : message?.fingerprint, !fingerprint.isEmpty else { return target }
        target.https = https
        target.fingerprint = fingerprint
        let alias = message.map { LocalSendDevice.shown($0.alias, limit: LocalSendLimits.aliasCharacters) }
        target.ref = PeerRef(id: LocalSendDevice.peerID(fingerprint: fingerprint), name: alias)
        return target
    }

    /// `HOST:PORT`, `[V6]:PORT` or a bare IPv4 address; nil for anything else (a name or ID).
    package static func address(_ peer: String) -> (host: String, port: Int)? {
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            let host = String(peer[peer.index(after: peer.startIndex)..<close])
            let rest = peer[peer.index(after: close)...]
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return (host, port)
        }
        let parts = peer.split(separator: ":", omittingEmptySubsequences: false)
        let isIPv4 = { (text: Substring) in
            let octets = text.split(separator: ".", omittingEmptySubsequences: false)
            return octets.count == 4 && octets.allSatisfy { UInt8($0) != nil }
        }
        if parts.count == 1, isIPv4(parts[0]) { return (String(parts[0]), LocalSendDefaults.port) }
        guard parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else { return nil }
        return (String(parts[0]), port)
    }
}

extension LocalSendDiscovery {
    /// Looks for the device `query` names (ID, ID prefix or alias) until `timeout`. Two devices
    /// with that alias are refused with both listed.
    package func find(_ query: String, link: MulticastLink, registrations: LocalSendServer? = nil, timeout: Duration) async throws(NearbyError) -> LocalSendDevice {
        let state = Locked<(found: LocalSendDevice?, seen: [LocalSendDevice])>((nil, []))
        // Until found, or the deadline (the core's race).
        _ = await firstResult(within: timeout) {
            await run(link, registrations: registrations) { sighting in
                guard case let .found(device) = sighting else { return true }
                return state.withLock { state in
                    if state.seen.count < LocalSendLimits.devices { state.seen.append(device) }
                    guard device.matches(query) else { return true }
                    state.found = device
                    return false
                }
            }
            return true
        }
        let (found, seen) = state.withLock { ($0.found, $0.seen) }
        guard let found else {
            throw .peerNotFound(query, waitedSeconds: Double(timeout / .milliseconds(1)) / 1000)
        }
        let same = seen.filter { $0.alias == found.alias && $0.fingerprint != found.fingerprint }
        if found.alias == query, !same.isEmpty {
            throw .peerAmbiguous(query, candidates: ([found] + same).map { "\($0.id) (\($0.host))" })
        }
        return found
    }
}
