import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import NearbyBase
@testable import NearbyDiscovery
@testable import NearbyDNS

/// The pure parts of doctor's mDNS checks: /proc/net/udp, the verdicts, the answers read.
@Suite struct DoctorMDNSTests {
    // As the kernel prints them: avahi-daemon's two sockets and an ephemeral one.
    static let udp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
         1234: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000   108        0 20531 2 0000000000000000 0
         1235: 0100007F:A1B2 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 20999 2 0000000000000000 0
         1236: 0100630A:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 31337 2 0000000000000000 0
        garbage line
        """
    static let udp6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
          100: 00000000000000000000000000000000:14E9 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000   108        0 20532 2 0000000000000000 0
          101: 000080FE00000000FF7E5C0291D3A2FE:14E9 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000   108        0 20533 2 0000000000000000 0
        """

    @Test func procNetUDPIsRead() {
        let v4 = MDNSStacks.parse(Self.udp, family: .ipv4)
        #expect(v4.count == 3)
        #expect(v4[0] == MDNSStacks.Socket(family: .ipv4, localAddress: "0.0.0.0", port: 5353, uid: 108, inode: 20531))
        #expect(v4[1].localAddress == "127.0.0.1" && v4[1].port == 0xA1B2 && v4[1].uid == 1000)
        #expect(v4[2].localAddress == "10.99.0.1" && v4[2].port == 5353 && v4[2].inode == 31337)
        let v6 = MDNSStacks.parse(Self.udp6, family: .ipv6)
        #expect(v6.count == 2)
        #expect(v6[0].localAddress == "::" && v6[0].port == 5353 && v6[0].inode == 20532)
        #expect(v6[1].localAddress == "fe80::25c:7eff:fea2:d391")
        // Wrong widths, not hex, nothing: skipped, never a crash.
        #expect(MDNSStacks.address(hex: "0100007", family: .ipv4) == nil)
        #expect(MDNSStacks.address(hex: "0100007G", family: .ipv4) == nil)
        #expect(MDNSStacks.parse("", family: .ipv4).isEmpty)
        #expect(MDNSStacks.parse(String(repeating: "1: 00000000:14E9 x 07 a b c 0 0 1\n", count: MDNSStacks.maxLines + 10), family: .ipv4).count == MDNSStacks.maxLines)
    }

    static func holder(_ family: MDNSStacks.Family, _ inode: UInt64, uid: Int = 0, _ owner: (Int, String)?, candidates: [(Int, String)] = []) -> MDNSStacks.Holder {
        MDNSStacks.Holder(
            socket: MDNSStacks.Socket(family: family, localAddress: family == .ipv4 ? "0.0.0.0" : "::", port: 5353, uid: uid, inode: inode),
            owner: owner.map { MDNSStacks.Process(pid: $0.0, command: $0.1) },
            candidates: candidates.map { MDNSStacks.Process(pid: $0.0, command: $0.1) })
    }

    @Test func oneResponderPerFamilyIsOK() {
        let check = MDNSStacks.check([Self.holder(.ipv4, 1, (812, "avahi-daemon")), Self.holder(.ipv6, 2, (812, "avahi-daemon"))], asRoot: true)
        #expect(check.name == "mdns-stacks" && check.status == .ok, "\(check)")
        #expect(check.detail.contains("IPv4: avahi-daemon pid 812; IPv6: avahi-daemon pid 812"), "\(check.detail)")
        // One process with a socket per address is still one responder.
        let twice = MDNSStacks.check([Self.holder(.ipv4, 1, (812, "avahi-daemon")), Self.holder(.ipv4, 3, (812, "avahi-daemon"))], asRoot: true)
        #expect(twice.status == .ok, "\(twice)")
    }

    @Test func aSecondResponderFailsNamingBoth() {
        let check = MDNSStacks.check([Self.holder(.ipv4, 1, (812, "avahi-daemon")), Self.holder(.ipv4, 2, (900, "python3"))], asRoot: true)
        #expect(check.status == .fail && check.exitStatus == .failure)
        #expect(check.detail.contains("avahi-daemon pid 812 and python3 pid 900"), "\(check.detail)")
        #expect(check.detail.contains("more than one mDNS responder on this host (IPv4)"), "\(check.detail)")
        #expect(check.hint?.contains("python3 binds 5353 beside avahi-daemon") == true, "\(check.hint ?? "")")
        let resolved = MDNSStacks.check([Self.holder(.ipv4, 1, (812, "avahi-daemon")), Self.holder(.ipv4, 2, (640, "systemd-resolve"))], asRoot: true)
        #expect(resolved.detail.contains("avahi-daemon pid 812 and systemd-resolve pid 640"), "\(resolved.detail)")
        #expect(resolved.hint?.contains("MulticastDNS=no in /etc/systemd/resolved.conf") == true, "\(resolved.hint ?? "")")
    }

    /// An ordinary user cannot read root's /proc/PID/fd: the sockets still count, and the check
    /// says which owners it could not see and which responders may be them.
    @Test func ownersThisUserCannotSeeStillCount() {
        let check = MDNSStacks.check([
            Self.holder(.ipv4, 1, nil, candidates: [(812, "avahi-daemon")]), Self.holder(.ipv4, 2, nil, candidates: [(812, "avahi-daemon")]),
            Self.holder(.ipv6, 3, nil, candidates: [(812, "avahi-daemon")]),
        ], asRoot: false)
        #expect(check.status == .fail, "\(check)")
        #expect(check.detail.contains("IPv4: 2 sockets of uid 0 (root) whose process this user cannot see; responders of that user in this network: avahi-daemon pid 812"),
                "\(check.detail)")
        #expect(check.detail.contains("(IPv4)"), "\(check.detail)")
        #expect(check.hint?.contains("sudo ss -lupn sport = :5353") == true, "\(check.hint ?? "")")
        // One hidden socket per family: nothing to fail, but said.
        let alone = MDNSStacks.check([Self.holder(.ipv4, 1, nil, candidates: [(812, "avahi-daemon")])], asRoot: false)
        #expect(alone.status == .ok && alone.detail.contains("run as root to name them"), "\(alone)")
        // A known owner and an unknown one: two responders.
        let mixed = MDNSStacks.check([Self.holder(.ipv4, 1, (900, "python3")), Self.holder(.ipv4, 2, nil)], asRoot: false)
        #expect(mixed.status == .fail && mixed.detail.contains("python3 pid 900 and 1 socket of uid 0"), "\(mixed.detail)")
        #expect(MDNSStacks.check([], asRoot: false).status == .warn)
    }

    @Test func theAvahiConfigurationIsFound() {
        #expect(AvahiHostName.configFile(["avahi-daemon", "--no-drop-root", "-f", "/tmp/h1/avahi.conf"]) == "/tmp/h1/avahi.conf")
        #expect(AvahiHostName.configFile(["avahi-daemon", "--file=/etc/x.conf"]) == "/etc/x.conf")
        #expect(AvahiHostName.configFile(["avahi-daemon: running [h1.local]"]) == nil)
        #expect(AvahiHostName.hostName(inConfig: "[server]\n#host-name=foo\nhost-name = h1\nuse-ipv4=yes\n") == "h1")
        #expect(AvahiHostName.hostName(inConfig: "[server]\n#host-name=foo\n") == nil)
    }

    // MARK: the questions and their answers

    @Test func theQuestionsAskForTheTypeTheAddressAndTheInstance() throws {
        #expect(MDNSQuestion.reverseName("10.99.0.2").map(MDNSQuestion.text) == "2.0.99.10.in-addr.arpa")
        #expect(MDNSQuestion.reverseName("fe80::1").map(MDNSQuestion.text)?.hasPrefix("1.0.0.0.0.0.0.0") == true)
        #expect(MDNSQuestion.reverseName("h2.local") == nil)
        let questions = MDNSQuestion.questions(address: "10.99.0.2", registrationType: "_chat._tcp", instance: "abc123", unicastResponse: true)
        #expect(questions.map { MDNSQuestion.text($0.name) } == ["_chat._tcp.local", "2.0.99.10.in-addr.arpa", "abc123._chat._tcp.local"])
        #expect(questions.map(\.type) == [.ptr, .ptr, .srv])
        #expect(questions.allSatisfy { $0.qClass.rawValue == 0x8001 })
        #expect(MDNSQuestion.questions(address: "10.99.0.2", registrationType: "_chat._tcp", instance: nil, unicastResponse: false).allSatisfy { $0.qClass == .in })
    }

    @Test func theQuestionGoesToTheAddressOnThisHostsSubnet() {
        let lan = [NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: ["10.99.0.1"], networks: ["10.99.0.1/24", "fe80::1/64"])]
        let route = MDNSQuestion.route(["172.17.0.2", "fe80::2%nb0", "10.99.0.2"], interfaces: lan)
        #expect(route?.address == "10.99.0.2" && route?.via == "10.99.0.1")
        let routed = MDNSQuestion.route(["10.98.0.2"], interfaces: lan)
        #expect(routed?.address == "10.98.0.2" && routed?.via == nil)
        // An IPv6-only link: the link-local address by its zone's interface, asked from ours there.
        let linkLocal = MDNSQuestion.route(["fe80::2%nb0"], interfaces: lan)
        #expect(linkLocal?.address == "fe80::2%nb0" && linkLocal?.via == "fe80::1%nb0")
        #expect(MDNSQuestion.route(["fe80::2%eth9"], interfaces: lan) == nil)
        #expect(MDNSQuestion.route(["fe80::2"], interfaces: lan) == nil)
        let global = [NetworkInterface(name: "nb0", up: true, multicast: true, loopback: false, addresses: [], networks: ["2001:db8::1/64", "fe80::1/64"])]
        let onSubnet = MDNSQuestion.route(["2001:db8:9::5", "2001:db8::2"], interfaces: global)
        #expect(onSubnet?.address == "2001:db8::2" && onSubnet?.via == "2001:db8::1%nb0")
        let away = MDNSQuestion.route(["2001:db8:9::5"], interfaces: global)
        #expect(away?.address == "2001:db8:9::5" && away?.via == nil)
        // IPv4 still first when there is one.
        #expect(MDNSQuestion.route(["fe80::2%nb0", "10.98.0.2"], interfaces: lan)?.address == "10.98.0.2")
    }

    @Test func aZonedAddressKeepsItsScope() throws {
        let address = try #require(MDNSQuestion.socketAddress("fe80::2%lo", port: 5353))
        guard case let .v6(v6) = address else { return #expect(Bool(false), "not IPv6") }
        #expect(v6.address.sin6_scope_id == if_nametoindex("lo"))
        #expect(MDNSQuestion.socketAddress("10.99.0.2", port: 5353)?.port == 5353)
        #expect(MDNSQuestion.socketAddress("h2.local%nb0", port: 5353) == nil)
    }

    static func answer(id: UInt16) throws -> DNSMessage {
        var message = DNSMessage(id: id)
        message.isResponse = true
        message.authoritative = true
        let type = try DNSName("_chat._tcp.local")
        message.answers = [
            DNSRecord(name: type, type: .ptr, ttl: 10, data: .ptr(try type.prepending("abc123"))),
            DNSRecord(name: try DNSName("2.0.99.10.in-addr.arpa"), type: .ptr, rrClass: DNSClass(rawValue: 0x8001), ttl: 10, data: .ptr(try DNSName("h2.local"))),
        ]
        message.additional = [
            DNSRecord(name: try type.prepending("abc123"), type: .srv, rrClass: DNSClass(rawValue: 0x8001), ttl: 10,
                      data: .srv(priority: 0, weight: 0, port: 4242, target: try DNSName("h2.local"))),
        ]
        return message
    }

    @Test func anAnswerIsRead() throws {
        let decoded = try DNSMessage.decode(try Self.answer(id: 7).encode())
        let answer = MDNSQuestion.read(decoded, source: "10.99.0.2", registrationType: "_chat._tcp", instance: "abc123")
        var expected = MDNSQuestion.Answer(source: "10.99.0.2", hosts: ["h2.local"], instances: ["abc123"], instanceHost: "h2.local")
        // The SRV's port, per instance: what doctor NAME dials when the link's answer names the peer.
        expected.ports = ["abc123": 4242]
        #expect(answer == expected)
    }

    typealias Outbound = NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>

    /// A responder on loopback (at another port than 5353, as the test may not bind it) that runs
    /// `reply` for each question it is sent: its port, and the task serving it.
    static func responder(
        _ reply: @escaping @Sendable (DNSMessage, AddressedEnvelope<ByteBuffer>, Outbound) async throws -> Void
    ) async throws -> (Int, Task<Void, any Error>) {
        let responder = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(wrappingChannelSynchronously: channel)
                }
            }
        let port = try #require(responder.channel.localAddress?.port)
        let served = Task {
            try await responder.executeThenClose { inbound, outbound in
                for try await envelope in inbound {
                    guard let query = try? DNSMessage.decode(Array(envelope.data.readableBytesView)) else { continue }
                    try await reply(query, envelope, outbound)
                }
            }
        }
        return (port, served)
    }

    /// A responder that answers the question sent to it, then floods: doctor reads at most
    /// `maxAnswers` and ends by its wait.
    @Test(.timeLimit(.minutes(2))) func theQuestionIsAnsweredAndAFloodIsBounded() async throws {
        let (port, served) = try await Self.responder { query, envelope, outbound in
            // Junk and answers to other IDs first, then the answer, then a flood.
            for _ in 0..<(MDNSQuestion.maxAnswers * 2) {
                try await outbound.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: [0xFF, 0x00, 0x01])))
            }
            try await outbound.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: try Self.answer(id: query.id &+ 9).encode())))
            try await outbound.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: try Self.answer(id: query.id).encode())))
        }
        defer { served.cancel() }
        // Not a timed test (beside busy loops this took 26 s): that it ends (the test's time limit),
        // with what it read.
        let outcome = await MDNSQuestion.ask(
            address: "127.0.0.1", via: nil, registrationType: "_chat._tcp", instance: "abc123", wait: .seconds(3), port: port)
        // The flood came before the answer: at most maxAnswers datagrams are read, so the answer
        // may be among the ones never read; either way no more is read and the wait ends.
        #expect(outcome.multicastSent == false)
        #expect(outcome.multicast == nil)
        if let unicast = outcome.unicast { #expect(unicast.instances == ["abc123"]) }
    }

    @Test(.timeLimit(.minutes(2))) func aQuietResponderIsAnsweredByTheAnswerItGives() async throws {
        let (port, served) = try await Self.responder { query, envelope, outbound in
            try await outbound.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: try Self.answer(id: query.id).encode())))
        }
        defer { served.cancel() }
        // Answered: it does not wait out its wait, 10 min, five times the test's time limit.
        let outcome = await MDNSQuestion.ask(address: "127.0.0.1", via: nil, registrationType: "_chat._tcp", instance: "abc123", wait: .seconds(TestNodes.patience * 5), port: port)
        #expect(outcome.unicast?.instances == ["abc123"] && outcome.unicast?.instanceHost == "h2.local")
    }

    /// A neighbour asked directly for this host's name answers with an address: a claim. Answers to
    /// another question's ID, and ones without the name's address, are not.
    @Test(.timeLimit(.minutes(2))) func aNeighbourAnsweringForTheNameIsAClaim() async throws {
        let (port, served) = try await Self.responder { query, envelope, outbound in
            let name = try DNSName("h1.local")
            func answer(id: UInt16, _ data: RData, type: DNSType, for owner: DNSName) throws -> ByteBuffer {
                var message = DNSMessage(id: id)
                message.isResponse = true
                message.answers = [DNSRecord(name: owner, type: type, rrClass: .in, ttl: 120, data: data)]
                return ByteBuffer(bytes: try message.encode())
            }
            for data in [try answer(id: query.id &+ 1, .a([10, 99, 0, 8]), type: .a, for: name),
                         try answer(id: query.id, .a([10, 99, 0, 9]), type: .a, for: try DNSName("h9.local")),
                         try answer(id: query.id, .a([10, 99, 0, 3]), type: .a, for: name)] {
                try await outbound.write(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: data))
            }
        }
        defer { served.cancel() }
        let claims = await MDNSQuestion.askClaims(name: "h1.local.", neighbours: ["127.0.0.1", "no address"], wait: .milliseconds(500), port: port)
        #expect(claims.asked == 1)
        #expect(claims.claims == [MDNSQuestion.Claim(source: "127.0.0.1", addresses: ["10.99.0.3"])])
    }
}
