import Foundation
import NearbyDNS
import NearbyBase

/// Browses one service type in a unicast DNS domain: every `pollInterval` (the records' TTL, so
/// never faster than a cache would allow) it asks for the PTR records of `_<service>._tcp.DOMAIN`,
/// then each instance's SRV and TXT and its host's A and AAAA, and reports what changed as the
/// mDNS `Browser` does. An instance whose `_lease` has ended is treated as gone. If the first poll
/// fails the stream fails; a later failure is logged and the next poll tries again.
final class WideAreaBrowser: PeerBrowsing, Sendable {
    package let settings: WideAreaSettings
    package let registrationType: String
    package var domain: String { settings.domainText }
    private let dns: WideAreaDNS
    private let task = Locked<Task<Void, Never>?>(nil)
    /// Settled once the first poll ended: true when it succeeded.
    private let first = OneShot<Bool>()

    package init(settings: WideAreaSettings, registrationType: String) {
        self.settings = settings
        self.registrationType = registrationType
        dns = WideAreaDNS(settings: settings)
    }

    package func start() throws(NearbyError) -> AsyncStream<Browser.Update> {
        let typeName: DNSName
        do {
            typeName = try DNSName(registrationType).appending(settings.domain)
        } catch {
            throw .invalidArgument("\(registrationType).\(settings.domainText) is not a valid DNS name")
        }
        let (stream, continuation) = AsyncStream<Browser.Update>.makeStream()
        let task = Task { [dns, settings, domain, first = self.first] in
            let started = ContinuousClock.now
            var table = WideAreaTable()
            while !Task.isCancelled {
                do throws(NearbyError) {
                    let seen = try await Self.poll(dns, typeName: typeName, domain: domain, started: started)
                    for update in table.apply(seen) { continuation.yield(update) }
                    _ = first.settle(true)
                } catch {
                    if !first.isSettled || Task.isCancelled {
                        for update in table.removeAll() { continuation.yield(update) }
                        if !Task.isCancelled { continuation.yield(.failed(error)) }
                        _ = first.settle(false)
                        break
                    }
                    NearbyLog.logger.warning("browsing \(domain) failed this time: \(error.localizedDescription)")
                }
                do { try await Task.sleep(for: settings.pollInterval) } catch { break }
            }
            _ = first.settle(false)
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        self.task.withLock { $0 = task }
        return stream
    }

    package func stop() {
        task.withLock { $0 }?.cancel()
    }

    package func firstLook() async -> Bool { await first.wait() ?? false }

    /// At most this many instances are followed per poll: each costs four queries, and a hostile
    /// server could list thousands.
    package static let maxInstances = 256

    /// One look at the domain: every live instance of the type, keyed by instance name.
    static func poll(_ dns: WideAreaDNS, typeName: DNSName, domain: String, started: ContinuousClock.Instant) async throws(NearbyError) -> [String: DiscoveredPeer] {
        let server = try dns.queryServer()
        var seen: [String: DiscoveredPeer] = [:]
        let now = WideAreaDNS.now()
        for case let .ptr(name) in try await dns.lookup(typeName, .ptr, server: server).prefix(maxInstances).map(\.data) {
            // Only instances directly under the type: a PTR elsewhere could point us anywhere.
            guard name.labels.count == typeName.labels.count + 1, name.isSubdomain(of: typeName),
                  let instance = name.firstLabel, seen[instance] == nil
            else { continue }
            guard case let .srv(_, _, port, target)? = try await dns.lookup(name, .srv, server: server).first?.data else { continue }
            var strings: [[UInt8]] = []
            if case let .txt(found)? = try await dns.lookup(name, .txt, server: server).first?.data { strings = found }
            guard !WideAreaLease.ended(strings, now: now) else { continue }
            let txt = TXTRecord.decode(strings.flatMap { [UInt8(min($0.count, 255))] + $0.prefix(255) })
            var addresses: [String] = []
            for record in try await dns.lookup(target, .a, server: server) + dns.lookup(target, .aaaa, server: server) {
                if let address = Self.text(record.data) { addresses.append(address) }
            }
            var peer = DiscoveredPeer(
                instance: instance, txt: txt, host: target.description, port: Int(port), addresses: addresses,
                interface: nil, elapsed: ContinuousClock.now - started)
            peer.domain = domain
            seen[instance] = peer
        }
        return seen
    }

    static func text(_ data: RData) -> String? {
        switch data {
        case let .a(bytes): return bytes.map(String.init).joined(separator: ".")
        case let .aaaa(bytes):
            var groups: [String] = []
            for index in stride(from: 0, to: 16, by: 2) { groups.append(String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16)) }
            return groups.joined(separator: ":")
        default: return nil
        }
    }
}

/// What the node and `browse` need from a browser, mDNS (`Browser`) or unicast DNS
/// (`WideAreaBrowser`).
package protocol PeerBrowsing: AnyObject, Sendable {
    var domain: String { get }
    /// Every place it searches (`MergedBrowser`: the link and each domain).
    var domains: [String] { get }
    /// Starts browsing; may wait for the daemon, never past the caller's cancellation.
    func start() async throws(NearbyError) -> AsyncStream<Browser.Update>
    func stop()
    /// Returns once the browser has had its first look (a unicast domain: the first poll, whose
    /// failure is a `.failed` update): true when it worked. A browse that ends by time waits for
    /// it, so a dead server is never "nothing found".
    func firstLook() async -> Bool
}

extension PeerBrowsing {
    package var domains: [String] { [domain] }
}

extension Browser: PeerBrowsing {
    package func firstLook() async -> Bool { true }
}

/// The browser for a service: mDNS on the link (unless `link` is false and a domain is given) and
/// unicast DNS in each domain, merged into one when there is more than one place.
package func makeBrowser(_ service: ServiceType, wideAreas: [WideAreaSettings], link: Bool = true) -> any PeerBrowsing {
    var sources: [any PeerBrowsing] = link || wideAreas.isEmpty ? [Browser(service: service)] : []
    sources += wideAreas.map { WideAreaBrowser(settings: $0, registrationType: service.registrationType) }
    return sources.count == 1 ? sources[0] : MergedBrowser(sources: sources)
}
