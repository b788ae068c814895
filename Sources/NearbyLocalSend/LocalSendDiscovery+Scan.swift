import NIOHTTP1

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
            guard octets.count == 4, !ScopedAddress.isIPv6(joined.address), !joined.interface.hasPrefix("lo") else { continue }
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

    /// One address: a LocalSend device answers `/register` on 53317, over HTTPS (its certificate
    /// is its fingerprint), or over plain HTTP when encryption is off there (its answer's
    /// fingerprint is then only a claim, as the official app takes it); its answer says its alias.
    func probe(_ host: String, interface: String) async -> LocalSendDevice? {
        guard let http else { return nil }
        var body = me
        body.announce = nil
        guard let (response, https) = await http.eitherWay(
            host: host, port: LocalSendDefaults.port, method: .POST, path: LocalSendDefaults.apiPrefix + "/register",
            body: .json(body.encoded()), timeout: Self.scanTimeout)
        else { return nil }
        var message = DeviceMessage.decode(response.body, limit: LocalSendLimits.jsonBodyBytes, needsFingerprint: false)
            ?? DeviceMessage(alias: host, fingerprint: nil)
        guard let fingerprint = https ? response.fingerprint : message.fingerprint, !fingerprint.isEmpty,
              !LocalSendIdentity.sameFingerprint(fingerprint, identity.fingerprint)
        else { return nil }
        message.fingerprint = fingerprint
        message.port = LocalSendDefaults.port
        message.protocol = https ? "https" : "http"
        return LocalSendDevice(message, host: host, interface: interface)
    }
}

extension LocalSendHTTP {
    /// One request over HTTPS, else, when what answers does not speak TLS (it answers garbage, or
    /// nothing within `timeout`), over plain HTTP on the same port: the answer (status 200 only) and whether it came over HTTPS. Nil when neither answered.
    func eitherWay(host: String, port: Int, method: HTTPMethod, path: String, body: Body, timeout: Duration) async -> (Response, https: Bool)? {
        do {
            let response = try await request(
                host: host, port: port, https: true, method: method, path: path, body: body, expectedFingerprint: nil, timeout: timeout)
            return response.status == 200 ? (response, true) : nil
        } catch {
            // Something took the connection but spoke no TLS (it answered in plain text, or waits
            // for a request line that a ClientHello never ends): a device with encryption off.
            switch error {
            case .protocolError, .timedOut: if Task.isCancelled { return nil }
            default: return nil
            }
        }
        guard let response = try? await request(
            host: host, port: port, https: false, method: method, path: path, body: body, expectedFingerprint: nil, timeout: timeout),
            response.status == 200
        else { return nil }
        return (response, false)
    }
}
