import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// The one admission of strangers' connections (nearby's links, LocalSend's HTTPS, the web server).
@Suite struct AdmissionOwnerTests {
    @Test func aFullTableEvictsTheHeaviestAddressesOldestIdlePlaceNotOneInTheMiddleOfARequest() {
        var table = AdmissionTable(total: 3, perAddress: 3)
        guard case let .admitted(first, nil) = table.admit("10.0.0.66"),
              case let .admitted(second, nil) = table.admit("10.0.0.66"),
              case .admitted(_, nil) = table.admit("10.0.0.66")
        else { Issue.record("not admitted"); return }
        // The oldest is uploading: the next oldest, idle, goes for the newcomer.
        table.mark(.init(address: "10.0.0.66", serial: first), working: true)
        let newcomer = table.admit("10.0.0.2")
        #expect(newcomer == .admitted(4, evicting: .init(address: "10.0.0.66", serial: second)))
        // Busy again, then idle: an idle place is evicted first once more.
        table.mark(.init(address: "10.0.0.66", serial: first), working: false)
        let another = table.admit("10.0.0.3")
        #expect(another == .admitted(5, evicting: .init(address: "10.0.0.66", serial: first)))
        #expect(table.working.isEmpty)
    }

    @Test func aKnownPeerGivesItsPlaceBackAndAnyOtherAddressIsServed() {
        let admission = Admission(limits: .init(total: 4, perAddress: 4))
        let evicted = Locked(0)
        // One address holds every place (a stranger trickling request heads).
        let held = (0..<4).compactMap { _ in admission.admit("10.0.0.66") }
        for ticket in held { ticket.onEvict { evicted.withLock { $0 += 1 } } }
        #expect(held.count == 4 && admission.admit("10.0.0.66") == nil)
        // A friend on another address is still served: the stranger's oldest idle place goes.
        let friend = admission.admit("10.0.0.7")
        #expect(friend != nil && evicted.withLock { $0 } == 1)
        // Recognised (pinned), the friend no longer counts as a stranger.
        friend?.release()
        #expect(admission.held == 3)
        // A held ticket and its admission hold each other (a connection's close gives it back).
        for ticket in held { ticket.release() }
        #expect(admission.held == 0)
    }

    @Test func limitsComeFromTheEnvironment() {
        let base = Admission.Limits(total: 64, perAddress: 8, handshake: .seconds(10), idle: .seconds(30))
        let limits = base.with(environment: ["NEARBY_LOCALSEND_PER_ADDRESS": "2", "NEARBY_LOCALSEND_IDLE_MS": "500", "NEARBY_LOCALSEND_TOTAL": "-1"], prefix: "LOCALSEND")
        #expect(limits.perAddress == 2 && limits.idle == .milliseconds(500) && limits.total == 64 && limits.handshake == .seconds(10))
    }
}

@Suite struct UnresumablePartialTests {
    @Test func aNewRunDeletesAnUploadsPartialThatCannotBeResumedAndKeepsResumableOnes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-unres-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let localSend = Transfer.partialName(of: "tera.bin", key: "k", from: "localsend", alone: Transfer.unresumable, stranger: true)
        let nearby = Transfer.partialName(of: "tera.bin", key: "k", from: "peer", stranger: true)
        #expect(FileReceiver.isStrangersPartial(localSend) && Transfer.isUnresumablePartial(localSend))
        #expect(!Transfer.isUnresumablePartial(nearby))
        for name in [localSend, nearby] { #expect(FileManager.default.createFile(atPath: root + "/" + name, contents: Data(count: 1000))) }
        let partials = PartialFiles()
        partials.adopt(below: root)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == [nearby])
        #expect(partials.counted.files == 1)
    }
}
