import Foundation
import NIOCore
import NearbyDNS

/// Registers this node in a unicast DNS domain (RFC 6763 over RFC 2136 UPDATE, signed with TSIG):
/// PTR `_<service>._tcp.DOMAIN` → `<peer ID>._<service>._tcp.DOMAIN`, its SRV and TXT (the same
/// TXT as on mDNS, plus the `_lease` expiry), and A/AAAA for `nearby-<peer ID>.DOMAIN`. Refreshed
/// every third of the lease while running; deleted on `stop()`.
public actor WideAreaRegistrar {
    public let settings: WideAreaSettings
    private let dns: WideAreaDNS
    private let key: TSIGKey
    private let instance: String
    private let serviceType: String
    private let port: UInt16
    private let txt: [[UInt8]]
    private var server: DNSServerAddress?
    private var refresher: Task<Void, Never>?
    private var registered = false

    /// Reads the key at once, so a bad key file fails before anything is sent.
    public init(settings: WideAreaSettings, service: ServiceType, instance: String, port: UInt16, txt: TXTRecord) throws(NearbyError) {
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
    public func start() async throws(NearbyError) {
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

    private func register(_ server: DNSServerAddress) async throws(NearbyError) {
        let expiry = WideAreaDNS.now() + UInt64(settings.leaseSeconds)
        let update: DNSUpdate
        do {
            update = try records(expiry: expiry).register()
        } catch {
            throw .invalidArgument("cannot build DNS records for \(instance) in \(settings.domainText)")
        }
        try await dns.send(update, key: key, server: server)
    }

    private func refresh() async {
        guard registered, let server else { return }
        do {
            try await register(server)
        } catch {
            NearbyLog.logger.warning("could not refresh the registration in \(settings.domainText): \(error.localizedDescription)")
        }
    }

    /// Deletes our records. Bounded by the DNS timeout; a failure is logged, and the lease ends them.
    public func stop() async {
        refresher?.cancel()
        refresher = nil
        guard registered, let server else { return }
        registered = false
        do {
            try await dns.send(try records(expiry: 0).deregister(), key: key, server: server)
            NearbyLog.logger.info("deleted \(instance) from \(settings.domainText)")
        } catch {
            NearbyLog.logger.warning("could not delete the registration in \(settings.domainText): \(error.localizedDescription); its lease ends it")
        }
    }

    /// Any registering node may clean up: instances of our type whose lease ended more than a
    /// lease ago (their node died) are deleted, with the host records nearby made for them.
    private func removeExpired(_ server: DNSServerAddress) async {
        guard let typeName = try? DNSName(serviceType).appending(settings.domain),
              let pointers = try? await dns.lookup(typeName, .ptr, server: server)
        else { return }
        let cutoff = WideAreaDNS.now() - min(WideAreaDNS.now(), UInt64(settings.leaseSeconds))
        for case let .ptr(name) in pointers.map(\.data) where name.firstLabel != instance {
            guard let txt = try? await dns.lookup(name, .txt, server: server).first,
                  case let .txt(strings) = txt.data,
                  let expiry = WideAreaLease.expiry(strings), expiry < cutoff
            else { continue }
            var update = DNSUpdate(zone: settings.domain)
            update.delete(DNSRecord(name: typeName, type: .ptr, ttl: 0, data: .ptr(name)))
            update.deleteSet(name, .srv)
            update.deleteSet(name, .txt)
            if let label = name.firstLabel, let host = try? settings.domain.prepending("nearby-\(label)") {
                update.deleteSet(host, .a)
                update.deleteSet(host, .aaaa)
            }
            do {
                try await dns.send(update, key: key, server: server)
                NearbyLog.logger.info("removed \(name), whose lease ended")
            } catch {
                continue
            }
        }
    }
}

/// The `_lease=<UNIX seconds>` entry of a TXT record.
public enum WideAreaLease {
    public static func expiry(_ strings: [[UInt8]]) -> UInt64? {
        let prefix = Array("\(WideAreaSettings.leaseKey)=".utf8)
        for string in strings where string.starts(with: prefix) {
            return UInt64(String(decoding: string.dropFirst(prefix.count), as: UTF8.self))
        }
        return nil
    }

    /// Whether a TXT record says its lease has ended; a record without `_lease` (another DNS-SD
    /// implementation, or `nsupdate` by hand) has none and stays until deleted.
    public static func ended(_ strings: [[UInt8]], now: UInt64) -> Bool {
        guard let expiry = expiry(strings) else { return false }
        return expiry < now
    }
}
