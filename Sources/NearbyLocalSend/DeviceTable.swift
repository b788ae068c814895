import NearbyCore

/// The devices a browse knows, as a pure machine: each announcement or answer heard goes in, and
/// out comes what to report. Keyed by fingerprint; at most `capacity` devices, so a flood of fake
/// ones cannot grow it. A device not heard from for `lifetime` is lost (LocalSend has no goodbye;
/// a browse announces itself every few seconds so that live devices answer again).
public struct DeviceTable: Sendable {
    public enum Change: Sendable, Equatable {
        case found(LocalSendDevice)
        case updated(LocalSendDevice, changed: [String])
        /// The table is full: this device (and others, until some are lost) is ignored. Said once per filling.
        case full(LocalSendDevice)
    }

    private struct Entry {
        var device: LocalSendDevice
        var lastHeard: ContinuousClock.Instant
    }

    private var entries: [String: Entry] = [:]
    private var saidFull = false
    public let capacity: Int
    public let lifetime: Duration
    public let ownFingerprint: String

    public init(ownFingerprint: String, capacity: Int = LocalSendLimits.devices, lifetime: Duration = .seconds(35)) {
        self.ownFingerprint = ownFingerprint.lowercased()
        self.capacity = capacity
        self.lifetime = lifetime
    }

    public var count: Int { entries.count }
    public var devices: [LocalSendDevice] { entries.values.map(\.device).sorted { $0.id < $1.id } }

    /// A device was heard. Nil when there is nothing to report (ourselves, or nothing changed).
    public mutating func heard(_ device: LocalSendDevice, at now: ContinuousClock.Instant) -> Change? {
        let key = device.fingerprint.lowercased()
        guard key != ownFingerprint else { return nil }
        if var entry = entries[key] {
            let before = entry.device
            entry.device = device
            entry.lastHeard = now
            entries[key] = entry
            var changed: [String] = []
            if before.alias != device.alias { changed.append("name") }
            if before.host != device.host { changed.append("addresses") }
            if before.port != device.port { changed.append("port") }
            if before.info != device.info || before.version != device.version { changed.append("info") }
            return changed.isEmpty ? nil : .updated(device, changed: changed)
        }
        guard entries.count < capacity else {
            if saidFull { return nil }
            saidFull = true
            return .full(device)
        }
        entries[key] = Entry(device: device, lastHeard: now)
        return .found(device)
    }

    /// The devices not heard from for `lifetime`, removed.
    public mutating func expire(at now: ContinuousClock.Instant) -> [LocalSendDevice] {
        let gone = entries.filter { now - $0.value.lastHeard > lifetime }
        for key in gone.keys { entries[key] = nil }
        if !gone.isEmpty, entries.count < capacity { saidFull = false }
        return gone.values.map(\.device).sorted { $0.id < $1.id }
    }
}

/// Whether to answer an announcement: at most once per device per `interval`, and at most
/// `perSecond` answers in all, so a flood of announcements makes no flood of answers.
public struct ReplyGate: Sendable {
    private var last: [String: ContinuousClock.Instant] = [:]
    private var windowStart: ContinuousClock.Instant?
    private var inWindow = 0
    public let interval: Duration
    public let perSecond: Int

    public init(interval: Duration = .seconds(2), perSecond: Int = 20) {
        self.interval = interval
        self.perSecond = perSecond
    }

    public mutating func allows(_ fingerprint: String, at now: ContinuousClock.Instant) -> Bool {
        if let start = windowStart, now - start < .seconds(1) {
            guard inWindow < perSecond else { return false }
        } else {
            windowStart = now
            inWindow = 0
        }
        if let previous = last[fingerprint], now - previous < interval { return false }
        if last.count >= LocalSendLimits.devices * 4 { last = last.filter { now - $0.value < interval } }
        guard last.count < LocalSendLimits.devices * 4 else { return false }
        last[fingerprint] = now
        inWindow += 1
        return true
    }
}
