import NIOHTTP1
import NearbyCore

extension LocalSendDiscovery {
    /// Addresses one sweep tries at once, and how long each may take to answer.
    static let scanWidth = 32
    static let scanTimeout: Duration = .seconds(1)

    /// LocalSend's legacy discovery (protocol v2 section 3.2), only when asked (`browse --localsend
    /// --scan`): `POST /register` to every other address of the /24 of each joined interface, 32
    /// at a time, 1 s each — at most 254 addresses per interface, whatever its netmask; `run`
    /// repeats it every 20 s.
    func scan(_ link: MulticastLink, found: @escaping @Sendable (LocalSendDevice) -> Void) async {
        var targets: [(host: String, interface: String)] = []
        for joined in link.joined {
            let octets = joined.address.split(separator: ".")
            guard octets.count == 4, !joined.interface.hasPrefix("lo") else { continue }
            let prefix = octets.prefix(3).joined(separator: ".")
            for last in 1...254 where "\(prefix).\(last)" != joined.address {
                targets.append(("\(prefix).\(last)", joined.interface))
            }
        }
        await withTaskGroup(of: Void.self) { group in
            var next = targets.makeIterator()
            for _ in 0..<Self.scanWidth {
                guard let target = next.next() else { break }
                group.addTask { if let device = await probe(target.host, interface: target.interface) { found(device) } }
            }
            while await group.next() != nil {
                guard !Task.isCancelled, let target = next.next() else { continue }
                group.addTask { if let device = await probe(target.host, interface: target.interface) { found(device) } }
            }
        }
    }

    /// One address: a LocalSend device answers `/register` over HTTPS on 53317; its certificate
    /// is its fingerprint, its answer says its alias.
    func probe(_ host: String, interface: String) async -> LocalSendDevice? {
        guard let http else { return nil }
        var body = me
        body.announce = nil
        guard let response = try? await http.request(
            host: host, port: LocalSendDefaults.port, https: true, method: .POST,
            path: LocalSendDefaults.apiPrefix + "/register", body: .json(body.encoded()),
            expectedFingerprint: nil, timeout: Self.scanTimeout),
            response.status == 200, let fingerprint = response.fingerprint, fingerprint != identity.fingerprint
        else { return nil }
        var message = DeviceMessage.decode(response.body, limit: LocalSendLimits.jsonBodyBytes, needsFingerprint: false)
            ?? DeviceMessage(alias: host, fingerprint: nil)
        message.fingerprint = fingerprint
        message.port = LocalSendDefaults.port
        message.protocol = "https"
        return LocalSendDevice(message, host: host, interface: interface)
    }
}
