import ArgumentParser
import Foundation
import NearbyBase
import NearbyCore
import NearbyWatch

extension Nearby {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the link's mDNS packets as they pass, decoded, with the faults they reveal.",
            discussion: """
                Captures every mDNS packet (UDP 5353, IPv4 and IPv6) on every interface, or on \
                --interface, with a packet socket: the daemon keeps every packet it gets (watch \
                binds no port). That needs root or CAP_NET_RAW; without them watch says so and \
                exits 14. Prints a 'packet' event per packet (time, interface, source and \
                destination, each question and record, what it means in DNS-SD terms), a 'finding' \
                event for each fault a rule sees (malformed packets, conflicts and renames, a \
                querier asking too fast, TTLs far from RFC 6762's, oversize or truncated answers, \
                a reflector's echo, a service flapping, a responder announcing too often or \
                answering what nobody asked, unicast queries a second mDNS stack takes from the \
                daemon), and a 'summary' when it ends (Ctrl-C, --timeout, or the end of --read's \
                file), exit 0. On a terminal: a table of the link's hosts, services and questions, \
                redrawn in place, the latest findings above it and the packets below it. \
                Under a flood watch backs off (nice 10, at most 2,000 packets a second decoded, \
                500 per source; the rest counted, not decoded) and says so: a 'sampling' event, \
                or the table's top line.

                --read reads a capture file (pcap, as `tcpdump -w` writes it, or pcapng, as \
                Wireshark does) instead: no privileges needed. Long NSEC type lists, TXT records \
                and unknown data are summarized; --full prints them whole. --service, --peer and --host narrow the packets printed; \
                --host the findings too.

                Examples:
                  sudo setcap cap_net_raw+ep "$(command -v nearby)"
                  nearby watch
                  nearby watch --json --timeout 10 | jq -c 'select(.event=="finding")'
                  nearby watch --service _http._tcp --interface wlan0
                  nearby watch --read capture.pcap --host 192.168.1.20
                """)

        @Option(help: ArgumentHelp("Capture on this interface only (default: all).", valueName: "name"))
        var interface: String?

        @Option(help: ArgumentHelp("Read a capture file (pcap or pcapng) instead of the network.", valueName: "file"),
                completion: .file())
        var read: String?

        @Option(help: ArgumentHelp("Only packets about this service: a nearby service name (chat) or a DNS-SD type (_http._tcp).", valueName: "type"))
        var service: String?

        @Option(help: ArgumentHelp("Only packets about this peer: an instance or host name, or a display name (TXT _d=).", valueName: "name"))
        var peer: String?

        @Option(help: ArgumentHelp("Only packets from, or with an address record of, this address (and its findings).", valueName: "address"))
        var host: String?

        @Flag(help: "Print NSEC type lists, TXT records and unknown data whole, not summarized.")
        var full = false

        @Option(help: ArgumentHelp("Stop after this many seconds (exit 0).", valueName: "seconds"))
        var timeout: Double?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds") }
            if read != nil, interface != nil { throw ValidationError("--read reads a file; --interface is for capturing") }
        }

        func run() async throws {
            let context = output.configure(CommandContext.current)
            try await reporting(context, verbose: output.verbose) {
                let filter = WatchFilter(service: try serviceType(), peer: peer, host: host)
                let printer = WatchPrinter(context: context, live: read == nil, timeout: timeout)
                let source: WatchRun.Source = read.map { .file($0) } ?? .capture(interface: interface)
                TerminationSignal.install()
                let summary = try await withThrowingTaskGroup(of: Events.WatchSummary?.self) { group in
                    group.addTask { try await WatchRun.run(source, filter: filter, full: full, printer: printer) }
                    group.addTask {
                        _ = await TerminationSignal.next()
                        return nil
                    }
                    if let timeout {
                        group.addTask {
                            try? await Task.sleep(for: .seconds(timeout))
                            return nil
                        }
                    }
                    var summary: Events.WatchSummary?
                    while let next = try await group.next() {
                        group.cancelAll()
                        if let next { summary = next }
                    }
                    return summary
                }
                if let summary { printer.finish(summary) }
            }
        }

        /// `_http._tcp` as given, or a nearby service name as its type (`chat` → `_chat._tcp`).
        private func serviceType() throws(NearbyError) -> String? {
            guard let service else { return nil }
            if service.hasPrefix("_"), let full = DNSSDType.parse(service) { return full }
            return try ServiceType(option: service).registrationType
        }
    }
}

/// The capture's loop: packets in, events out, on a thread of the blocking pool (a packet socket
/// is read with poll(2) in 100 ms turns, so cancellation — Ctrl-C, --timeout — ends it within one).
enum WatchRun {
    enum Source: Sendable {
        case capture(interface: String?)
        case file(String)
    }

    static func run(_ source: Source, filter: WatchFilter, full: Bool, printer: WatchPrinter) async throws -> Events.WatchSummary {
        try await Blocking.run { cancellation in
            var engine = WatchEngine(filter: filter, full: full)
            var frames = FrameReader()
            switch source {
            case let .capture(interface):
                let capture = try PacketCapture(interface: interface)
                // Joined for as long as watch captures: behind IGMP/MLD snooping the switch sends the groups here.
                let membership = GroupMembership(interface: interface)
                defer { withExtendedLifetime(membership) {} }
                printer.started(interface: interface, file: nil)
                // Beside a flood the daemon comes first: this thread at nice 10, and past its
                // budgets a packet is counted, not decoded (`WatchPace`), and watch says so.
                PacketCapture.yieldToDaemons()
                var pace = WatchPace()
                var second = Date().timeIntervalSince1970, cpu = PacketCapture.threadCPU()
                var status = WatchStatus()
                while !cancellation.isCancelled {
                    // A turn's lines (up to 256 packets) leave in one write.
                    TickBuffer.holding {
                        capture.receive(waiting: 100) { time, index, bytes in
                            guard let datagram = frames.datagram(bytes, link: .rawIP, time: time) else { return }
                            guard pace.admit(datagram.source, at: time) else { return engine.skim(datagram, time: time) }
                            let name = capture.interfaceName(index)
                            let limit = capture.payloadLimit(name, ipv6: datagram.source.contains(":"))
                            printer.print(engine.process(datagram, time: time, interface: name, payloadLimit: limit))
                        }
                        let now = Date().timeIntervalSince1970
                        if now - second >= 1 || now < second {
                            second = now
                            // Drops said as they happen: what watch shows is then less than the link carried.
                            let before = capture.dropped, used = PacketCapture.threadCPU()
                            capture.countDrops()
                            printer.print(engine.kernelDropped(capture.dropped - before, total: capture.dropped, time: now, interface: interface))
                            let sampling = pace.second(dropped: capture.dropped - before, droppedTotal: capture.dropped, cpu: used - cpu)
                            cpu = used
                            if let sampling { printer.sampling(sampling) }
                            status = WatchStatus(dropped: capture.dropped, sampling: sampling)
                            printer.print(engine.tick(time: now))
                        }
                        printer.tick(engine.table, now: now, status: status)
                    }
                }
                capture.countDrops()
                return engine.summary(dropped: capture.dropped)
            case let .file(path):
                let file: PcapFile
                do { file = try PcapFile(path: path) { cancellation.isCancelled } } catch {
                    throw NearbyError.ioFailure(path: path, reason: (error as? PcapError)?.reason ?? ErrorWords.describe(error))
                }
                defer { file.close() }
                do {
                    var reader = try PcapReader(file)
                    printer.started(interface: nil, file: path)
                    var more = true
                    while more, !cancellation.isCancelled {
                        // 256 frames' lines at a time leave in one write.
                        try TickBuffer.holding {
                            for _ in 0..<256 {
                                guard let frame = try reader.next() else { return more = false }
                                guard let datagram = frames.datagram(frame.bytes[...], link: frame.link, time: frame.time) else { continue }
                                let interface = datagram.interfaceIndex.map { "if\($0)" }
                                printer.print(engine.process(datagram, time: frame.time, interface: interface))
                                printer.tick(engine.table, now: frame.time, status: WatchStatus())
                            }
                        }
                    }
                    printer.print(engine.ended())
                    printer.tick(engine.table, now: nil, status: WatchStatus())
                } catch let error as PcapError where error.isCancellation {
                    return engine.summary(dropped: 0)
                } catch {
                    if engine.packets > 0 { printer.finish(engine.summary(dropped: 0)) }
                    throw NearbyError.badCaptureFile(path: path, reason: (error as? PcapError)?.reason ?? ErrorWords.describe(error))
                }
                return engine.summary(dropped: 0)
            }
        }
    }
}
