
/// The devices a browse knows, as a pure machine: each announcement or answer heard goes in, and
/// out comes what to report. Keyed by fingerprint; at most `capacity` devices, and at most
/// `perAddress` from one address, so a flood of fake ones from a host fills only that host's share.
/// A device that answered (`confirmed`: its `register` answer came over TLS with the certificate it
/// announced) is kept over decoys: when the table or its address's share is full, it takes the
/// place of the oldest unconfirmed device. A device heard over both IPv4 and IPv6 keeps its IPv4
/// address while that is heard, and moves to IPv6 when only that is. A device not heard from for `lifetime` is lost
/// (LocalSend has no goodbye; a browse announces itself every few seconds so that live devices
/// answer again).
struct DeviceTable: Sendable {
    package enum Change: Sendable, Equatable {
        case found(LocalSendDevice)
        case updated(LocalSendDevice, changed: [String])
        /// The table is full: this device (and others, until some are lost) is ignored. Said once per filling.
        case full(LocalSendDevice)
    }

    private struct Entry {
        var device: LocalSendDevice
        var lastHeard: ContinuousClock.Instant
        var confirmed: Bool
        /// When it was last heard at an IPv4 address (nil: never).
        var heardIPv4: ContinuousClock.Instant?
    }

    private var entries: [String: Entry] = [:]
    private var saidFull = false
    package let capacity: Int
    package let perAddress: Int
    package let lifetime: Duration
    package let ownFingerprint: String

    package init(ownFingerprint: String, capacity: Int = LocalSendLimits.devices, perAddress: Int = 8, lifetime: Duration = .seconds(35)) {
        self.ownFingerprint = ownFingerprint.uppercased()
        self.capacity = capacity
        self.perAddress = max(1, perAddress)
        self.lifetime = lifetime
    }

    package var count: Int { entries.count }
    package var devices: [LocalSendDevice] { entries.values.map(\.device).sorted { $0.id < $1.id } }

    /// A device was heard. Nil when there is nothing to report (ourselves, or nothing changed).
    package mutating func heard(_ device: LocalSendDevice, confirmed: Bool = false, at now: ContinuousClock.Instant) -> Change? {
        let key = device.fingerprint.uppercased()
        guard key != ownFingerprint else { return nil }
        let overIPv6 = ScopedAddress.isIPv6(device.host)
        if var entry = entries[key] {
            let before = entry.device
            var device = device
            // A device on both families stays at its IPv4 address while that is heard (it
            // announces on both groups at once: no address flapping with every announcement).
            if overIPv6, !ScopedAddress.isIPv6(before.host), let heard = entry.heardIPv4, now - heard <= lifetime {
                device.host = before.host
                device.interface = before.interface
            }
            if !overIPv6 { entry.heardIPv4 = now }
            // An unconfirmed claim does not move a confirmed device elsewhere.
            if entry.confirmed, !confirmed, before.host != device.host { return nil }
            entry.device = device
            entry.lastHeard = now
            entry.confirmed = entry.confirmed || confirmed
            entries[key] = entry
            var changed: [String] = []
            if before.alias != device.alias { changed.append("name") }
            if before.host != device.host { changed.append("addresses") }
            if before.port != device.port { changed.append("port") }
            if before.info != device.info || before.version != device.version { changed.append("info") }
            return changed.isEmpty ? nil : .updated(device, changed: changed)
        }
        let sameAddress = entries.filter { $0.value.device.host == device.host }
        if sameAddress.count >= perAddress {
            // This address's share is full: only a confirmed device displaces one of its decoys.
            guard confirmed, let decoy = Self.oldestUnconfirmed(sameAddress) else { return nil }
            entries[decoy] = nil
        } else if entries.count >= capacity {
            guard confirmed, let decoy = Self.oldestUnconfirmed(heaviestAddress()) else {
                if saidFull { return nil }
                saidFull = true
                return .full(device)
            }
            entries[decoy] = nil
        }
        entries[key] = Entry(device: device, lastHeard: now, confirmed: confirmed, heardIPv4: overIPv6 ? nil : now)
        return .found(device)
    }

    private static func oldestUnconfirmed(_ among: [String: Entry]) -> String? {
        among.filter { !$0.value.confirmed }.min { $0.value.lastHeard < $1.value.lastHeard }?.key
    }

    /// The entries of the address holding the most unconfirmed ones (else all of them).
    private func heaviestAddress() -> [String: Entry] {
        var counts: [String: Int] = [:]
        for entry in entries.values where !entry.confirmed { counts[entry.device.host, default: 0] += 1 }
        guard let host = counts.max(by: { $0.value < $1.value })?.key else { return entries }
        return entries.filter { $0.value.device.host == host }
    }

    /// The devices not heard from for `lifetime`, removed.
    package mutating func expire(at now: ContinuousClock.Instant) -> [LocalSendDevice] {
        let gone = entries.filter { now - $0.value.lastHeard > lifetime }
        for key in gone.keys { entries[key] = nil }
        if !gone.isEmpty, entries.count < capacity { saidFull = false }
        return gone.values.map(\.device).sorted { $0.id < $1.id }
    }
}

/// Whether to answer an announcement (a `register` to the address it came from): at most once per
/// address per `interval`, at most `perSecond` answers in all, and an address whose register
/// failed is left alone for `backoff` — so forged announcements naming another host make this
/// node no reflector: a handful of connection attempts to that host, not one per datagram.
struct ReplyLimiter: Sendable {
    private var last: [String: ContinuousClock.Instant] = [:]
    private var windowStart: ContinuousClock.Instant?
    private var inWindow = 0
    package let interval: Duration
    package let perSecond: Int

    package let backoff: Duration

    package init(interval: Duration = .seconds(1), perSecond: Int = 8, backoff: Duration = .seconds(30)) {
        self.interval = interval
        self.perSecond = perSecond
        self.backoff = backoff
    }

    /// The register to `address` failed: it is not tried again for `backoff`.
    package mutating func failed(_ address: String, at now: ContinuousClock.Instant) {
        last[address] = now + backoff - interval
    }

    /// Whether to register with `address` now (the announcement's source address).
    package mutating func allows(_ address: String, at now: ContinuousClock.Instant) -> Bool {
        let fingerprint = address
        if let start = windowStart, now - start < .seconds(1) {
            guard inWindow < perSecond else { return false }
        } else {
            windowStart = now
            inWindow = 0
        }
        if let previous = last[fingerprint], now < previous + interval { return false }
        if last.count >= LocalSendLimits.devices * 4 { last = last.filter { now < $0.value + interval } }
        guard last.count < LocalSendLimits.devices * 4 else { return false }
        last[fingerprint] = now
        inWindow += 1
        return true
    }
}
