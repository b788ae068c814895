import Foundation
import NIOCore
import NearbyDNS
import NearbyBase

/// Registers this node in a unicast DNS domain (RFC 6763 over RFC 2136 UPDATE, signed with TSIG):
/// PTR `_<service>._tcp.DOMAIN` → `<peer ID>._<service>._tcp.DOMAIN`, its SRV and TXT (the same
/// TXT as on mDNS, plus the `_lease` expiry), and A/AAAA for `nearby-<peer ID>.DOMAIN`. Refreshed
/// every third of the lease while running; deleted on `stop()`.
package actor WideAreaRegistrar {
    package let settings: WideAreaSettings
    private let dns: WideAreaDNS
    private let key: TSIGKey
    private let instance: String
    private let serviceType: String
    private let port: UInt16
    private let txt: [[UInt8]]
    private var server: DNSServerAddress?
    private var refresher: Task<Void, Never>?
    private var registered = false
    /// The TXT strings our last successful update wrote: the prerequisite of the next one.
    private var written: [[UInt8]]?

    /// Reads the key at once, so a bad key file fails before anything is sent.
    package init(settings: WideAreaSettings, service: ServiceType, instance: String, port: UInt16, txt: TXTRecord) throws(NearbyError) {
        self.settings = settings
        dns = WideAreaDNS(settings: settings)
        key = try settings.loadKey()
        self.instance = instance
        serviceType = service.registrationType
        self.port = port
        self.txt = Self.strings(try txt.encode())
    }

    /// Length-prefixed character-strings back into strings.
    static func strings(_ wire: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var index = 0
        while index < wire.count {
            let length = Int(wire[index])
            let end = min(wire.count, index + 1 + length)
            out.append(Array(wire[(index + 1)..<end]))
            index = end
        }
        return out
    }

    /// This host's addresses a peer elsewhere could reach: not loopback, not IPv6 link-local.
    static func localAddresses() -> (v4: [[UInt8]], v6: [[UInt8]]) {
        var v4: [[UInt8]] = []
        var v6: [[UInt8]] = []
        for device in (try? System.enumerateDevices()) ?? [] {
            guard let address = device.address else { continue }
            switch address {
            case let .v4(ip):
                let value = UInt32(bigEndian: ip.address.sin_addr.s_addr)
                let bytes = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
                if bytes[0] != 127, !v4.contains(bytes) { v4.append(bytes) }
            case let .v6(ip):
                let bytes = withUnsafeBytes(of: ip.address.sin6_addr) { Array($0) }
                let loopback = bytes == Array(repeating: 0, count: 15) + [1]
                let linkLocal = bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
                if !loopback, !linkLocal, !v6.contains(bytes) { v6.append(bytes) }
            default: continue
            }
        }
        return (v4, v6)
    }

    func records(expiry: UInt64) throws(NearbyError) -> ServiceRecords {
        let addresses = Self.localAddresses()
        return ServiceRecords(
            instance: instance, serviceType: serviceType, domain: settings.domain, hostLabel: "nearby-\(instance)",
            port: port, txt: txt + [Array("\(WideAreaSettings.leaseKey)=\(expiry)".utf8)],
            ipv4: addresses.v4, ipv6: addresses.v6, ttl: settings.ttl)
    }

    /// Registers, and keeps the registration fresh until `stop()`. Throws the server's refusal in
    /// words (unreachable, BADKEY/BADSIG, BADTIME, NOTAUTH/REFUSED).
    package func start() async throws(NearbyError) {
        let server = try await dns.updateServer()
        self.server = server
        try await register(server)
        registered = true
        NearbyLog.logger.info("registered \(instance) in \(settings.domainText) at \(server) (lease \(settings.leaseSeconds) s)")
        await removeExpired(server)
        refresher = Task { [weak self, settings] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: settings.refreshInterval) } catch { return }
                await self?.refresh()
            }
        }
    }

    /// Writes our records with a prerequisite the server checks, so that the signed update, if
    /// someone keeps it and sends it again, changes nothing: our TXT exactly as we last wrote it
    /// (a refresh), or else the zone's SOA exactly as read now (the first registration: its serial
    /// changes with every update to the zone). A prerequisite that no longer holds (another node
    /// updated the zone between our read and our update) is read again, a few times.
    private func register(_ server: DNSServerAddress) async throws(NearbyError) {
        var attempt = 0
        while true {
            attempt += 1
            let expiry = WideAreaDNS.now() + UInt64(settings.leaseSeconds)
            let mine = try records(expiry: expiry)
            var update: DNSUpdate
            do {
                update = try mine.register()
                let name = try mine.instanceName()
                if let written {
                    update.require(DNSRecord(name: name, type: .txt, ttl: 0, data: .txt(written)))
                } else {
                    guard let soa = try await dns.lookup(settings.domain, .soa, server: server).first else {
                        throw NearbyError.wideArea(.zoneRefused(zone: settings.domainText, server: server.description, rcode: "no SOA"))
                    }
                    update.require(soa)
                }
            } catch let error as NearbyError {
                throw error
            } catch {
                throw .invalidArgument("cannot build DNS records for \(instance) in \(settings.domainText)")
            }
            do {
                try await dns.send(update, key: key, server: server)
                written = mine.txt
                return
            } catch let error where Self.isChanged(error) && attempt < Self.attempts {
                // Our TXT is not what we wrote (a replay of an older refresh, an operator), or the
                // zone changed since we read its SOA: start from what the server has now.
                NearbyLog.logger.info("the records in \(settings.domainText) changed under our update; reading them again")
                written = nil
            }
        }
    }

    static let attempts = 4

    static func isChanged(_ error: NearbyError) -> Bool {
        if case .wideArea(.changed) = error { return true }
        return false
    }

    private func refresh() async {
        guard registered, let server else { return }
        do {
            try await register(server)
        } catch {
            NearbyLog.logger.warning("could not refresh the registration in \(settings.domainText): \(error.localizedDescription)")
        }
    }

    /// Deletes our records, only while they are what we wrote (so a replay of this update after we
    /// registered again deletes nothing). Bounded by the DNS timeout; a failure is logged, and the
    /// lease ends them.
    package func stop() async {
        refresher?.cancel()
        refresher = nil
        guard registered, let server else { return }
        registered = false
        do {
            let mine = try records(expiry: 0)
            var update = try mine.deregister()
            if let written { update.require(DNSRecord(name: try mine.instanceName(), type: .txt, ttl: 0, data: .txt(written))) }
            try await dns.send(update, key: key, server: server)
            NearbyLog.logger.info("deleted \(instance) from \(settings.domainText)")
        } catch {
            NearbyLog.logger.warning("could not delete the registration in \(settings.domainText): \(error.localizedDescription); its lease ends it")
        }
    }

    /// Any registering node may clean up: instances of our type whose lease ended more than a
    /// lease ago (their node died). What to delete is read from the server the update goes to, and
    /// the update carries it as a prerequisite, so that only the server's own data can make it
    /// delete anything (WideAreaCleanup).
    private func removeExpired(_ server: DNSServerAddress) async {
        guard let typeName = try? DNSName(serviceType).appending(settings.domain),
              let pointers = try? await dns.lookup(typeName, .ptr, server: server)
        else { return }
        let cutoff = WideAreaDNS.now() - min(WideAreaDNS.now(), UInt64(settings.leaseSeconds))
        var tried = Set<DNSName>()
        for case let .ptr(name) in pointers.prefix(WideAreaBrowser.maxInstances).map(\.data) {
            guard tried.insert(name).inserted, WideAreaCleanup.isCandidate(name, typeName: typeName, own: instance),
                  let txt = try? await dns.lookup(name, .txt, server: server),
                  let update = WideAreaCleanup.removal(of: name, typeName: typeName, domain: settings.domain, txt: txt, cutoff: cutoff)
            else { continue }
            do {
                try await dns.send(update, key: key, server: server)
                NearbyLog.logger.info("removed \(name), whose lease ended")
            } catch {
                NearbyLog.logger.info("did not remove \(name): \(error.localizedDescription)")
            }
        }
    }
}

/// The `_lease=<UNIX seconds>` entry of a TXT record.
enum WideAreaLease {
    package static func expiry(_ strings: [[UInt8]]) -> UInt64? {
        let prefix = Array("\(WideAreaSettings.leaseKey)=".utf8)
        for string in strings where string.starts(with: prefix) {
            return UInt64(String(decoding: string.dropFirst(prefix.count), as: UTF8.self))
        }
        return nil
    }

    /// Whether a TXT record says its lease has ended; a record without `_lease` (another DNS-SD
    /// implementation, or `nsupdate` by hand) has none and stays until deleted.
    package static func ended(_ strings: [[UInt8]], now: UInt64) -> Bool {
        guard let expiry = expiry(strings) else { return false }
        return expiry < now
    }
}
