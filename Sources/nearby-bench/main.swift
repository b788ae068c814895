// nearby-bench: measures sessions against raw TCP on the same link (see bench/sessions.sh).
//
//   nearby-bench echo --service S              node that accepts everyone and echoes every message
//   nearby-bench ping --service S PEER N       invite latency (discovery included and excluded),
//                                              message round trips, small-message throughput
//   nearby-bench invites --service S ADDRESS N  N invitations (HOST:PORT) from one node, each left
//                                              at once: invite -> connected p50/p90, for profiling
//   nearby-bench tcp-echo PORT                 raw TCP echo of length-prefixed messages
//   nearby-bench tcp-ping HOST PORT N          the same measurements over raw TCP
//   nearby-bench disk DIR [MiB]                a received file's disk work alone (write, hash, fsync, place)
//   nearby-bench primitives [MiB]              SHA-256, AES-128-GCM and a copy alone, CPU-s per GiB
import Foundation
import NIOCore
import NIOPosix
import NearbyCore
import Synchronization
import NearbyBase
import NearbyIdentity
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#endif

// As the nearby executable does: Swift concurrency on NIO's event loops.
NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
let arguments = CommandLine.arguments
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("nearby-bench: \(message)\n".utf8))
    exit(2)
}

/// Passes message events to a handler and drops everything else. (The handler is boxed: a closure
/// kept in a `Mutex` itself gains two conversion thunks at every `withLock`, and the benchmark
/// would measure its own slowdown.)
final class MessageSink: EventSink {
    final class Handler: Sendable {
        let call: @Sendable (Events.Message) -> Void
        init(_ call: @escaping @Sendable (Events.Message) -> Void) { self.call = call }
    }
    private let box = Locked<Handler?>(nil)
    private let gone = Locked<(@Sendable (String) -> Void)?>(nil)
    func set(_ call: @escaping @Sendable (Events.Message) -> Void) { box.withLock { $0 = Handler(call) } }
    /// Called with a peer's ID when its session ends.
    func onDisconnected(_ call: @escaping @Sendable (String) -> Void) { gone.withLock { $0 = call } }
    func emit(_ body: some EventBody) {
        if let message = body as? Events.Message {
            box.withLock { $0 }?.call(message)
        } else if let disconnected = body as? Events.Disconnected {
            gone.withLock { $0 }?(disconnected.peer.id)
        }
    }
    func emitLine(_ line: String) {}
}

/// `home`: where the node keeps known peers and remembered addresses; a fresh directory by default.
func makeNode(service: String, advertise: Bool, autoAccept: Bool, sink: MessageSink, home: String? = nil) async throws -> Node {
    let home = home ?? FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-\(UUID().uuidString)").path
    let paths = NearbyPaths(home: home)
    let environmentHome = ProcessInfo.processInfo.environment["NEARBY_HOME"].map(NearbyPaths.init(home:)) ?? paths
    let identity = try IdentityStore(paths: environmentHome).loadOrCreate(defaultName: advertise ? "bench-echo" : "bench-ping")
    var configuration = NodeConfiguration(service: try ServiceType(service))
    configuration.advertise = advertise
    configuration.autoAccept = autoAccept
    let node = try Node(identity: identity, configuration: configuration, paths: paths, events: sink)
    try await node.start()
    // The node's work runs until `stop()` ends it (a benchmark tool: nobody else owns this task).
    Task { await node.run() }
    return node
}

/// The lines one peer's echoes are made of, taken by `sendLines` in batches of all that waits.
final class EchoLines: ByteSource {
    private struct State {
        var pending = ByteBuffer()
        var waiter: OneShot<ByteBuffer?>?
        var finished = false
    }
    private let state = Locked(State())

    func append(_ text: String) {
        let waiter = state.withLock { state -> OneShot<ByteBuffer?>? in
            state.pending.writeString(text)
            state.pending.writeInteger(UInt8(ascii: "\n"))
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.settle(take())
    }

    /// The session ended: `next()` says so.
    func finish() {
        let waiter = state.withLock { state -> OneShot<ByteBuffer?>? in
            state.finished = true
            return Swift.exchange(&state.waiter, with: nil)
        }
        waiter?.settle(nil)
    }

    private func take() -> ByteBuffer { state.withLock { Swift.exchange(&$0.pending, with: ByteBuffer()) } }

    func next() async throws -> ByteBuffer? {
        let ready = take()
        if ready.readableBytes > 0 { return ready }
        let waiter = OneShot<ByteBuffer?>()
        let now = state.withLock { state -> ByteBuffer?? in
            if state.pending.readableBytes > 0 { return Swift.exchange(&state.pending, with: ByteBuffer()) }
            if state.finished { return .some(nil) }
            state.waiter = waiter
            return nil
        }
        if let now { return now }
        // Settled by `append` or `finish` only, as the wait always was.
        return await waiter.waitThroughCancellation() ?? nil
    }
}

/// Nearest-rank percentile.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[max(0, min(sorted.count - 1, rank - 1))]
}

/// One unbuffered line on stdout (the bench script reads it while we run).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func report(_ name: String, _ value: Double, _ unit: String) {
    say(String(format: "%@ %.3f %@", name, value, unit))
}

let clock = ContinuousClock()
func ms(_ duration: Duration) -> Double { Double(duration / .microseconds(1)) / 1000 }

/// The same measurements for both transports: `count` sequential round trips (p50, p99), then
/// `count * 10` messages pipelined (`send` writes them all, `receive` waits for all the echoes).
func measure(
    isolation: isolated (any Actor)? = #isolation, count: Int, roundTrip: () async throws -> Void,
    send: @escaping @Sendable (Int) async throws -> Void, receive: (Int) async throws -> Void
) async throws {
    var rtts: [Double] = []
    for _ in 0..<count {
        let start = clock.now
        try await roundTrip()
        rtts.append(ms(clock.now - start))
    }
    report("rtt_p50", percentile(rtts, 0.5), "ms")
    report("rtt_p99", percentile(rtts, 0.99), "ms")
    let burst = count * 10
    let start = clock.now
    let sender = Task { try await send(burst) }
    try await receive(burst)
    try await sender.value
    report("echoed_msgs_per_s", Double(burst) / (ms(clock.now - start) / 1000), "msg/s")
}

/// The echoes coming back, in order; one reader at a time.
actor Inbox {
    private let continuation: AsyncStream<Int>.Continuation
    private var iterator: AsyncStream<Int>.AsyncIterator
    init() {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        self.continuation = continuation
        iterator = stream.makeAsyncIterator()
    }
    nonisolated func deliver(_ bytes: Int) { continuation.yield(bytes) }
    func next() async -> Int? {
        var current = iterator
        defer { iterator = current }
        return await current.next(isolation: self)
    }
}

/// Off the main actor, where the node's own work runs: no hop to the main thread and back per message.
func nearbyRoundTrips(node: Node, target: [String], inbox: Inbox, count: Int) async throws {
    let payload = Array(repeating: UInt8(ascii: "x"), count: 64)
    try await measure(
        count: count,
        roundTrip: {
            try await node.sendMessage(payload, to: target, all: false, unreliable: false, timeout: 5, client: nil)
            guard await inbox.next() != nil else { fail("echo stopped") }
        },
        send: { n in for _ in 0..<n { try await node.sendMessage(payload, to: target, all: false, unreliable: false, timeout: 5, client: nil) } },
        receive: { n in for _ in 0..<n { guard await inbox.next() != nil else { fail("echo stopped") } } })
}

func readFully(_ fd: Int32, _ count: Int) {
    var buffer = [UInt8](repeating: 0, count: count)
    var got = 0
    while got < count {
        let n = buffer[got...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { fail("echo closed") }
        got += n
    }
}

/// Blocking system calls: on the main thread, with the pipelined writer on a thread of its own.
@MainActor func tcpRoundTrips(fd: Int32, message: [UInt8], count: Int) async throws {
    try await measure(
        count: count,
        roundTrip: {
            _ = message.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            readFully(fd, message.count)
        },
        send: { n in for _ in 0..<n { _ = message.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } } },
        receive: { n in readFully(fd, n * message.count) })
}

switch arguments.dropFirst().first {
case "echo":
    guard arguments.count == 4, arguments[2] == "--service" else { fail("usage: echo --service S") }
    let sink = MessageSink()
    let node = try await makeNode(service: arguments[3], advertise: true, autoAccept: true, sink: sink)
    // Echoes go back as `send --lines` sends: whatever arrived since the last batch left, in one
    // write (as the raw TCP echo writes back each read whole), one message per line; one sender
    // per session.
    let echoes = Locked<[String: EchoLines]>([:])
    sink.onDisconnected { peer in echoes.withLock { $0.removeValue(forKey: peer) }?.finish() }
    sink.set { message in
        guard let text = message.text else { return }
        let (lines, first) = echoes.withLock { echoes in
            if let lines = echoes[message.peer.id] { return (lines, false) }
            let lines = EchoLines()
            echoes[message.peer.id] = lines
            return (lines, true)
        }
        lines.append(text)
        if first {
            Task { try? await node.sendLines(from: lines, to: [message.peer.id], all: false, unreliable: false, timeout: 5, client: nil) }
        }
    }
    say("echo ready port \(await node.port)")
    _ = await TerminationSignal.next()
    await node.stop()

case "ping":
    guard arguments.count == 6, arguments[2] == "--service", let count = Int(arguments[5]) else {
        fail("usage: ping --service S PEER N")
    }
    let service = arguments[3], peer = arguments[4]
    // 1. Invitation latency, discovery included: a fresh node (cold browser) each time, with no
    // remembered address (NEARBY_REMEMBER=0 while the node is made).
    var withDiscovery: [Double] = []
    var direct: [Double] = []
    var remembered: [Double] = []
    var address = ""
    setenv("NEARBY_REMEMBER", "0", 1)
    for _ in 0..<5 {
        let sink = MessageSink()
        let node = try await makeNode(service: service, advertise: false, autoAccept: false, sink: sink)
        let start = clock.now
        let connected = try await node.invite(peer, context: nil, timeout: 10, client: nil)
        withDiscovery.append(ms(clock.now - start))
        address = connected.address
        await node.stop()
    }
    // 2. Discovery excluded: HOST:PORT.
    for _ in 0..<5 {
        let sink = MessageSink()
        let node = try await makeNode(service: service, advertise: false, autoAccept: false, sink: sink)
        let start = clock.now
        _ = try await node.invite(address, context: nil, timeout: 10, client: nil)
        direct.append(ms(clock.now - start))
        await node.stop()
    }
    unsetenv("NEARBY_REMEMBER")
    // 3. By name, to a peer reached before: its remembered address is tried at once.
    let memory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-\(UUID().uuidString)").path
    for attempt in 0..<6 {
        let sink = MessageSink()
        let node = try await makeNode(service: service, advertise: false, autoAccept: false, sink: sink, home: memory)
        let start = clock.now
        _ = try await node.invite(peer, context: nil, timeout: 10, client: nil)
        if attempt > 0 { remembered.append(ms(clock.now - start)) }  // the first one records the address
        await node.stop()
    }
    report("invite_connected_with_discovery_p50", percentile(withDiscovery, 0.5), "ms")
    report("invite_connected_remembered_p50", percentile(remembered, 0.5), "ms")
    report("invite_connected_direct_p50", percentile(direct, 0.5), "ms")

    // 3. Round trips and throughput over one session.
    let sink = MessageSink()
    let inbox = Inbox()
    sink.set { inbox.deliver($0.bytes) }
    let node = try await makeNode(service: service, advertise: false, autoAccept: false, sink: sink)
    let connected = try await node.invite(address, context: nil, timeout: 10, client: nil)
    try await nearbyRoundTrips(node: node, target: [connected.id.rawValue], inbox: inbox, count: count)
    await node.stop()

case "invites":
    guard arguments.count == 6, arguments[2] == "--service", let count = Int(arguments[5]) else {
        fail("usage: invites --service S ADDRESS N")
    }
    let node = try await makeNode(service: arguments[3], advertise: false, autoAccept: false, sink: MessageSink())
    var times: [Double] = []
    for _ in 0..<count {
        let start = clock.now
        let peer = try await node.invite(arguments[4], context: nil, timeout: 10, client: nil)
        times.append(ms(clock.now - start))
        _ = try await node.disconnect(peer.id.rawValue, all: false, client: nil)
    }
    report("invite_connected_direct_p50", percentile(times, 0.5), "ms")
    report("invite_connected_direct_p90", percentile(times, 0.9), "ms")
    await node.stop()

case "tcp-echo":
    guard arguments.count == 3, let port = UInt16(arguments[2]) else { fail("usage: tcp-echo PORT") }
    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0, listen(server, 16) == 0 else { fail("cannot listen on \(port)") }
    say("tcp-echo ready port \(port)")
    while true {
        let client = accept(server, nil, nil)
        guard client >= 0 else { continue }
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = read(client, &buffer, buffer.count)
                guard n > 0 else { close(client); return }
                var sent = 0
                while sent < n {
                    let w = buffer[sent..<n].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    guard w > 0 else { close(client); return }
                    sent += w
                }
            }
        }
    }

case "tcp-ping":
    guard arguments.count == 5, let port = UInt16(arguments[3]), let count = Int(arguments[4]) else {
        fail("usage: tcp-ping HOST PORT N")
    }
    var one: Int32 = 1
    func connectOnce() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, arguments[2], &address.sin_addr)
        let ok = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { fail("cannot connect") }
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }
    // A message is 4 bytes of length and 64 bytes of payload, like a nearby frame's header and body.
    let message = [UInt8](repeating: 0, count: 4) + [UInt8](repeating: UInt8(ascii: "x"), count: 64)
    var connects: [Double] = []
    for _ in 0..<5 {
        let start = clock.now
        let fd = connectOnce()
        connects.append(ms(clock.now - start))
        close(fd)
    }
    report("tcp_connect_p50", percentile(connects, 0.5), "ms")
    let fd = connectOnce()
    try await tcpRoundTrips(fd: fd, message: message, count: count)
    close(fd)

case "disk":
    guard arguments.count >= 3 else { fail("usage: disk DIR [MiB]") }
    await Disk.run(directory: arguments[2], mebibytes: arguments.count > 3 ? Int(arguments[3]) ?? 1024 : 1024)

case "primitives":
    Primitives.run(mebibytes: arguments.count > 2 ? Int(arguments[2]) ?? 1024 : 1024)

default:
    fail("usage: nearby-bench echo|ping|invites|tcp-echo|tcp-ping|disk|primitives …")
}
