import NIOCore
import NIOHTTP1
import NIOPosix
import NearbyBase
import NearbyDiscovery

/// `doctor --localsend [PEER]`: why a LocalSend device is not seen, or not reached. Checks in
/// order: the multicast group joined (on which interfaces), TCP 53317 free or taken, devices
/// answering our announcement; with PEER: the device found, its `/info` answering, and the
/// certificate it shows hashing to the fingerprint it announced.
package struct LocalSendDoctor: Sendable {
    let discovery: LocalSendDiscovery
    let http: LocalSendHTTP

    package init(discovery: LocalSendDiscovery, http: LocalSendHTTP) {
        self.discovery = discovery
        self.http = http
    }

    static let routeHint = "LocalSend devices announce to 224.0.0.167 by the routing table: this host and theirs need a route for 224.0.0.0/4 (or a default route) on the shared link, and the Wi-Fi must not isolate clients"

    /// Every check ends by `deadline` (doctor's one deadline, from its start); one it cuts short
    /// is a warning that says so.
    package func run(peer: String?, until deadline: ContinuousClock.Instant, record: @Sendable (DoctorCheck) -> Void) async {
        let started = ContinuousClock.now
        let link: MulticastLink
        do {
            link = try await MulticastLink.open()
        } catch {
            record(DoctorCheck("multicast-group", .fail, error.errorDescription ?? "\(error)",
                               hint: "another program holds UDP 53317 without sharing it: stop it, or run nearby as the same user", exitStatus: error.exitStatus))
            return
        }
        defer { link.close() }
        if link.joined.isEmpty {
            record(DoctorCheck("multicast-group", .fail, "joined \(LocalSendDefaults.multicastGroup) on no interface",
                               hint: "no IPv4 interface with multicast is up: connect to the network the device is on"))
        } else {
            let four = link.joined.filter { $0.group == LocalSendDefaults.multicastGroup }.map { "\($0.interface) (\($0.address))" }
            let six = link.joined.filter { $0.group != LocalSendDefaults.multicastGroup }.map(\.interface)
            var said = "joined \(LocalSendDefaults.multicastGroup):\(LocalSendDefaults.port) on \(four.isEmpty ? "no interface" : four.joined(separator: ", "))"
            said += six.isEmpty ? "; no IPv6 interface" : "; \(LocalSendDefaults.multicastGroupIPv6) on \(six.joined(separator: ", "))"
            record(DoctorCheck("multicast-group", .ok, said))
        }
        record(await Self.portCheck())
        // Official apps answer our announcement only with POST /register to the port we announce.
        let registrations = try? await LocalSendServer.bind(identity: discovery.identity, goodbye: LocalSendServer.briefGoodbye)
        let discovery = registrations.map { self.discovery.announcing(port: $0.port) } ?? self.discovery

        // Every device that answers our announcement within the limit (PEER: until it answers).
        let heard = Locked<[LocalSendDevice]>([])
        let wanted = peer.flatMap { LocalSendTarget.address($0) == nil ? $0 : nil }
        // PEER given by address is asked directly afterwards: the devices leave it half the time.
        let listening = peer.flatMap(LocalSendTarget.address) == nil ? deadline : started + (deadline - started) / 2
        _ = await firstResult(until: listening) {
            await discovery.run(link, registrations: registrations) { sighting in
                guard case let .found(device) = sighting else { return true }
                heard.withLock { if $0.count < LocalSendLimits.devices { $0.append(device) } }
                return wanted.map { !device.matches($0) } ?? true
            }
            return true
        }
        let devices = heard.withLock { $0 }
        let looked = String(format: "%.1f s", Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000)
        if devices.isEmpty {
            record(DoctorCheck("devices", .warn, "no LocalSend device answered in \(looked)", hint: Self.routeHint))
        } else {
            let names = devices.prefix(8).map { "\($0.alias) (\($0.host))" }.joined(separator: ", ")
            record(DoctorCheck("devices", .ok, "\(devices.count) device\(devices.count == 1 ? "" : "s") answered: \(names)\(devices.count > 8 ? ", …" : "")"))
        }
        guard let peer else { return }
        let target: LocalSendTarget
        if let address = LocalSendTarget.address(peer) {
            target = LocalSendTarget(host: address.host, port: address.port)
        } else if let device = devices.first(where: { $0.matches(peer) }) {
            record(DoctorCheck("peer", .ok, "'\(peer)' is \(device.alias) at \(device.host):\(device.port), fingerprint \(device.fingerprint)"))
            target = LocalSendTarget(device)
        } else {
            record(DoctorCheck("peer", .fail, "'\(peer)' did not answer in \(looked)",
                               hint: devices.isEmpty ? Self.routeHint : "the devices that answered are listed above; or give its address: nearby doctor --localsend HOST[:PORT]",
                               exitStatus: .peerNotFound))
            return
        }
        let response: LocalSendHTTP.Response
        let outOfTime = "run doctor again with a longer --timeout"
        guard deadline > .now else {
            return record(DoctorCheck("info", .warn, "not checked: doctor's --timeout ran out before \(target.host):\(target.port) was asked", hint: outOfTime))
        }
        do {
            response = try await http.request(
                host: target.host, port: target.port, https: target.https, method: .GET, path: LocalSendDefaults.apiPrefix + "/info",
                body: .none, expectedFingerprint: nil, timeout: deadline - .now)
        } catch where ContinuousClock.now >= deadline {
            record(DoctorCheck("info", .warn, "not checked: \(target.host):\(target.port) had not answered /info when doctor's --timeout ran out", hint: outOfTime))
            return
        } catch {
            record(DoctorCheck("info", .fail, "\(target.host):\(target.port) did not answer /info: \(ErrorWords.describe(error))",
                               hint: "is LocalSend open and set to receive on that device, on port \(target.port)? a firewall may drop TCP \(target.port)",
                               exitStatus: .connectionFailed))
            return
        }
        let said = DeviceMessage.decode(response.body, limit: LocalSendLimits.jsonBodyBytes, needsFingerprint: false)
        record(response.status == 200
            ? DoctorCheck("info", .ok, "\(target.host):\(target.port) answers /info: \(said.map { LocalSendDevice.shown($0.alias, limit: LocalSendLimits.aliasCharacters) } ?? "?"), protocol \(said?.version ?? "?")")
            : DoctorCheck("info", .fail, "\(target.host):\(target.port) answered /info with HTTP \(response.status)", exitStatus: .connectionFailed))
        guard let shown = response.fingerprint else {
            record(DoctorCheck("certificate", .warn, "the device speaks plain HTTP: nothing proves who it is", hint: "turn on encryption in its LocalSend settings"))
            return
        }
        if let announced = target.fingerprint {
            record(LocalSendIdentity.sameFingerprint(announced, shown)
                ? DoctorCheck("certificate", .ok, "its certificate hashes to the fingerprint it announced (\(shown))")
                : DoctorCheck("certificate", .fail, "its certificate hashes to \(shown), not to the fingerprint it announced (\(announced.uppercased())): another device may be using its name or address",
                              hint: "nearby refuses to send to it; check the device's LocalSend settings, or who else answers at \(target.host)", exitStatus: .identityCheckFailed))
        } else {
            record(DoctorCheck("certificate", .ok, "its certificate's fingerprint is \(shown) (an address was given: nothing announced to compare it with)"))
        }
    }

    /// Whether TCP 53317 is free here (what `advertise --localsend` will listen on).
    static func portCheck() async -> DoctorCheck {
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: "0.0.0.0", port: LocalSendDefaults.port).get()
            try? await channel.close()
            return DoctorCheck("port", .ok, "TCP \(LocalSendDefaults.port) is free: advertise --localsend will serve there")
        } catch {
            return DoctorCheck("port", .warn, "TCP \(LocalSendDefaults.port) is taken (another LocalSend app here?): advertise --localsend would serve on another port and announce it",
                               hint: "devices that only try \(LocalSendDefaults.port) (the HTTP scan fallback) will not find it; close the other app to use \(LocalSendDefaults.port)")
        }
    }
}
