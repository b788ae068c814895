import Foundation
import NearbyDNS
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyDiscovery

@Suite struct WideAreaTests {
    func peer(_ id: String, name: String = "Ann", port: Int = 1, addresses: [String] = ["10.0.0.1"]) -> DiscoveredPeer {
        var peer = DiscoveredPeer(
            instance: id, txt: TXTRecord(displayName: name, info: [:], protocolVersion: "2"), host: "h.example.",
            port: port, addresses: addresses, interface: nil, elapsed: .zero)
        peer.domain = "example."
        return peer
    }

    @Test func tableReportsFoundUpdatedAndLostAsMDNSDoes() {
        var table = WideAreaTable()
        #expect(table.apply(["a": peer("a")]) == [.found(peer("a"))])
        #expect(table.apply(["a": peer("a")]).isEmpty)
        #expect(table.apply(["a": peer("a", name: "Bo", addresses: ["10.0.0.2"])])
            == [.updated(peer("a", name: "Bo", addresses: ["10.0.0.2"]), changed: ["name", "addresses"])])
        #expect(table.apply(["b": peer("b")]) == [.lost(peer("a", name: "Bo", addresses: ["10.0.0.2"])), .found(peer("b"))])
        #expect(table.removeAll() == [.lost(peer("b"))])
    }

    @Test func serverAddressesParse() throws {
        #expect(try DNSServerAddress.parse("ns.example.org") == DNSServerAddress(host: "ns.example.org", port: 53))
        #expect(try DNSServerAddress.parse("10.0.0.1:5353") == DNSServerAddress(host: "10.0.0.1", port: 5353))
        #expect(try DNSServerAddress.parse("[::1]:54") == DNSServerAddress(host: "::1", port: 54))
        #expect(try DNSServerAddress.parse("fd00::1") == DNSServerAddress(host: "fd00::1", port: 53))
        for bad in ["", ":53", "host:0", "host:x", "[::1", "[::1]x"] {
            #expect(throws: NearbyError.self) { try DNSServerAddress.parse(bad) }
        }
    }

    @Test func aReplyMustMatchIdTypeAndQuestion() throws {
        let query = DNSMessage.query(id: 7, name: try DNSName("_nearby._tcp.example"), type: .ptr)
        var reply = query
        reply.isResponse = true
        #expect(DNSReplyMatch.matches(reply, query))
        var other = reply
        other.id = 8
        #expect(!DNSReplyMatch.matches(other, query))
        other = reply
        other.questions = [DNSQuestion(name: try DNSName("_nearby._tcp.evil"), type: .ptr)]
        #expect(!DNSReplyMatch.matches(other, query))
        other = reply
        other.isResponse = false
        #expect(!DNSReplyMatch.matches(other, query))
        other = reply
        other.questions = [DNSQuestion(name: try DNSName("_NEARBY._tcp.EXAMPLE"), type: .ptr)]
        #expect(DNSReplyMatch.matches(other, query))  // names compare case-insensitively
    }

    @Test func leasesEndAndRecordsWithoutOneStay() {
        let strings = [Array("_d=Ann".utf8), Array("_lease=1000".utf8)]
        #expect(WideAreaLease.expiry(strings) == 1000)
        #expect(!WideAreaLease.ended(strings, now: 1000))
        #expect(WideAreaLease.ended(strings, now: 1001))
        #expect(!WideAreaLease.ended([Array("_d=Ann".utf8)], now: .max))
        // The lease is not the user's info, and does not change what a peer says.
        let txt = TXTRecord.decode(strings.flatMap { [UInt8($0.count)] + $0 })
        #expect(txt.info.isEmpty && txt.displayName == "Ann")
    }

    @Test func updateAnswersAreNamedInWords() {
        let zone = "example.", server = "ns:53"
        #expect(WideAreaFailure.update(rcode: .noError, tsigError: 0, zone: zone, server: server) == nil)
        #expect(WideAreaFailure.update(rcode: .notAuth, tsigError: DNSRcode.badSig.rawValue, zone: zone, server: server)?.code == "dns-key-rejected")
        #expect(WideAreaFailure.update(rcode: .notAuth, tsigError: DNSRcode.badKey.rawValue, zone: zone, server: server)?.exitStatus == .dnsKeyRejected)
        #expect(WideAreaFailure.update(rcode: .notAuth, tsigError: DNSRcode.badTime.rawValue, zone: zone, server: server) == .clockSkew(server: server))
        #expect(WideAreaFailure.update(rcode: .notAuth, tsigError: 0, zone: zone, server: server)?.exitStatus == .dnsZoneRefused)
        #expect(WideAreaFailure.update(rcode: .refused, tsigError: nil, zone: zone, server: server)?.exitStatus == .dnsZoneRefused)
        #expect(WideAreaFailure.update(rcode: .servFail, tsigError: nil, zone: zone, server: server)?.exitStatus == .failure)
    }

    @Test func aKeyFileOthersCanReadIsRefusedAndTheSecretNeverShown() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-wa-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("dns.key").path
        let secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        try "key \"k\" { algorithm hmac-sha256; secret \"\(secret)\"; };\n".write(toFile: path, atomically: true, encoding: .utf8)
        let settings = try WideAreaSettings(domain: "example.org", server: nil, keyPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: NearbyError.self) { try settings.loadKey() }
        do {
            _ = try settings.loadKey()
        } catch {
            #expect(error.code == "dns-key-file")
            #expect(error.errorDescription?.contains("chmod 600") == true)
            #expect(error.errorDescription?.contains(secret) == false)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let key = try settings.loadKey()
        #expect(!"\(key)".contains(secret))
    }

    @Test func domainsAreCheckedAndEnvironmentTunesTheLease() throws {
        #expect(throws: NearbyError.self) { try WideAreaSettings(domain: "local.", server: nil, keyPath: "k") }
        #expect(throws: NearbyError.self) { try WideAreaSettings(domain: "a..b", server: nil, keyPath: "k") }
        var settings = try WideAreaSettings(domain: "Example.ORG", server: nil, keyPath: "k")
        #expect(settings.domainText == "Example.ORG.")
        settings.apply(environment: ["NEARBY_DNS_LEASE": "9", "NEARBY_DNS_TTL": "2"])
        #expect(settings.lease == .seconds(9) && settings.refreshInterval == .seconds(3) && settings.pollInterval == .seconds(2))
    }

    @Test func registrationStringsSplitBack() {
        #expect(WideAreaRegistrar.strings([3, 0x61, 0x62, 0x63, 0, 1, 0x78]) == [Array("abc".utf8), [], Array("x".utf8)])
        #expect(WideAreaRegistrar.strings([5, 0x61]) == [Array("a".utf8)])  // a length past the end is cut, not trusted
    }
}

@Suite struct WideAreaCleanupTests {
    let domain = (try? DNSName("lab.test")) ?? .root
    var typeName: DNSName { (try? DNSName("_wa._tcp").appending(domain)) ?? .root }

    func txt(_ name: DNSName, _ strings: [String]) -> DNSRecord {
        DNSRecord(name: name, type: .txt, ttl: 5, data: .txt(strings.map { Array($0.utf8) }))
    }

    @Test func onlyInstancesDirectlyUnderTheTypeAndNotOurOwn() throws {
        #expect(WideAreaCleanup.isCandidate(try typeName.prepending("abc"), typeName: typeName, own: "me"))
        #expect(!WideAreaCleanup.isCandidate(try typeName.prepending("me"), typeName: typeName, own: "me"))
        #expect(!WideAreaCleanup.isCandidate(try DNSName("web._http._tcp.lab.test"), typeName: typeName, own: "me"))
        #expect(!WideAreaCleanup.isCandidate(try typeName.prepending("x").prepending("y"), typeName: typeName, own: "me"))
    }

    @Test func aRemovalRequiresTheTXTExactlyAsRead() throws {
        let name = try typeName.prepending("dead")
        let record = txt(name, ["_d=Dead", "_nb=2", "_lease=1000"])
        let update = try #require(WideAreaCleanup.removal(of: name, typeName: typeName, domain: domain, txt: [record], cutoff: 2000))
        #expect(update.prerequisites == [DNSRecord(name: name, type: .txt, rrClass: .in, ttl: 0, data: record.data)])
        #expect(update.changes.contains(DNSRecord(name: typeName, type: .ptr, rrClass: .none, ttl: 0, data: .ptr(name))))
        // A lease not yet long over, no protocol key (another implementation's), two TXT records: nothing.
        #expect(WideAreaCleanup.removal(of: name, typeName: typeName, domain: domain, txt: [record], cutoff: 900) == nil)
        #expect(WideAreaCleanup.removal(of: name, typeName: typeName, domain: domain, txt: [txt(name, ["_d=X", "_lease=1000"])], cutoff: 2000) == nil)
        #expect(WideAreaCleanup.removal(of: name, typeName: typeName, domain: domain, txt: [record, txt(name, ["a=b"])], cutoff: 2000) == nil)
    }
}
