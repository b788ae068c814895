import NIOCore
import NIOHTTP1
import NearbyCore
import NearbyHTTP
import Synchronization
import NearbyBase
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `send-file --web` offers: each path given is one item, a file as itself, a directory as one
/// streamed .zip (`ZipLayout`).
package struct WebShareItem: Sendable {
    package enum Content: Sendable {
        case file(OutgoingFile)
        case directory([OutgoingFile], ZipLayout)
    }

    package let name: String
    package let content: Content

    package var size: UInt64 {
        switch content {
        case let .file(file): file.size
        case let .directory(_, layout): layout.totalSize
        }
    }

    package var downloadName: String {
        if case .directory = content { return name + ".zip" }
        return name
    }

    /// One item per path, in the order given; nil's reason when a directory cannot be one zip.
    package static func items(_ files: [OutgoingFile]) throws(NearbyError) -> [WebShareItem] {
        var order: [String] = []
        var groups: [String: [OutgoingFile]] = [:]
        for file in files {
            let top = String(file.relative.split(separator: "/", maxSplits: 1).first ?? Substring(file.relative))
            if groups[top] == nil { order.append(top) }
            groups[top, default: []].append(file)
        }
        return try order.map { top throws(NearbyError) -> WebShareItem in
            let group = groups[top] ?? []
            if group.count == 1, let only = group.first, only.relative == top, only.directory != true {
                return WebShareItem(name: top, content: .file(only))
            }
            let entries = group.map { ZipLayout.Entry(name: $0.relative, size: $0.size, modified: $0.modified, directory: $0.directory == true) }
            guard let layout = ZipLayout(entries) else {
                throw .invalidArgument("\(top): too large for one .zip (4 GiB or 65,535 entries): share the files inside it instead")
            }
            return WebShareItem(name: top, content: .directory(group, layout))
        }
    }
}

/// Which parts of each item have been sent whole, and so whether every item was downloaded in full
/// (a download resumed with `Range` counts with the part before it).
struct Coverage: Sendable, Equatable {
    /// Per item: merged, sorted byte intervals sent (at most `maxIntervals`; beyond that the
    /// smallest gaps are forgotten, which only delays `complete`).
    private(set) var sent: [[Range<UInt64>]]
    let sizes: [UInt64]
    static let maxIntervals = 64

    init(sizes: [UInt64]) {
        self.sizes = sizes
        sent = sizes.map { _ in [] }
    }

    mutating func add(_ item: Int, _ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var merged: [Range<UInt64>] = []
        for interval in (sent[item] + [range]).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, interval.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, interval.upperBound)
            } else {
                merged.append(interval)
            }
        }
        sent[item] = Array(merged.prefix(Self.maxIntervals))
    }

    func isComplete(_ item: Int) -> Bool {
        sizes[item] == 0 ? done0.contains(item) : sent[item] == [0..<sizes[item]]
    }

    /// Empty items downloaded (an empty range cannot be recorded as an interval).
    var done0: Set<Int> = []

    var allComplete: Bool { sizes.indices.allSatisfy(isComplete) }
}

/// `send-file --web`: the page and the downloads, with events; `finished` yields once every item
/// was downloaded whole.
package final class WebShare: WebSite {
    package let token: WebToken
    package let device: String
    package let items: [WebShareItem]
    let events: any EventSink
    let budget: ResourceBudget
    let coverage: Mutex<Coverage>
    let active = Mutex(0)
    package let finished: AsyncStream<Void>
    let finish: AsyncStream<Void>.Continuation
    static let block = 256 * 1024

    package init(token: WebToken, device: String, items: [WebShareItem], events: any EventSink, budget: ResourceBudget = .shared) {
        self.token = token
        self.device = device
        self.items = items
        self.events = events
        self.budget = budget
        coverage = Mutex(Coverage(sizes: items.map(\.size)))
        (finished, finish) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Downloads being answered now.
    package var answering: Int { active.withLock { $0 } }

    package func answer(_ request: WebRequest, body: HTTPBody, reply: WebReply) async throws -> Bool {
        switch WebRoute.of(method: request.method, uri: request.uri, token: token, items: items.count, uploads: false) {
        case .notFound, .upload:
            try await reply.notFound()
            return false
        case .page:
            let listed = items.map { item -> WebPages.Item in
                if case let .directory(files, _) = item.content { return .init(name: item.name, size: item.size, files: files.filter { $0.directory != true }.count) }
                return .init(name: item.name, size: item.size, files: nil)
            }
            try await reply.page(WebPages.share(device: device, items: listed), head: request.method == "HEAD")
            return true
        case let .item(index):
            active.withLock { $0 += 1 }
            defer { active.withLock { $0 -= 1 } }
            return try await download(index, request: request, reply: reply)
        }
    }

    func download(_ index: Int, request: WebRequest, reply: WebReply) async throws -> Bool {
        let item = items[index]
        let size = item.size
        var range = ByteRange.whole
        let tag = "\"\(size)-\(Int(itemModified(item)))\""
        if case .file = item.content {
            let ifRange = request.headers.first(name: "If-Range")
            if ifRange == nil || ifRange == tag { range = ByteRange.parse(request.headers.first(name: "Range"), size: size) }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Disposition", value: Self.disposition(item.downloadName))
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        if case .file = item.content {
            headers.add(name: "Accept-Ranges", value: "bytes")
            headers.add(name: "ETag", value: tag)
        } else {
            headers.add(name: "Accept-Ranges", value: "none")
        }
        let lower: UInt64, upper: UInt64, status: HTTPResponseStatus
        switch range {
        case .whole: (lower, upper, status) = (0, size, .ok)
        case let .part(from, to): (lower, upper, status) = (from, to, .partialContent)
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: "bytes */\(size)")
            headers.add(name: "Content-Length", value: "0")
            try await reply.start(status: .rangeNotSatisfiable, headers: headers)
            try await reply.end()
            return true
        }
        if status == .partialContent { headers.add(name: "Content-Range", value: "bytes \(lower)-\(upper - 1)/\(size)") }
        headers.add(name: "Content-Length", value: String(upper - lower))
        try await reply.start(status: status, headers: headers)
        if request.method == "HEAD" {
            try await reply.end()
            return true
        }
        let peer = PeerRef.browser(request.address)
        let transfer = "web-\(index)-\(UInt32.random(in: 0...UInt32.max))"
        let meter = Meter(events: events, transfer: transfer, peer: peer, path: item.downloadName, total: upper - lower)
        var sent: UInt64 = 0
        var failure: (any Error)?
        var bodyWritten = false
        do {
            switch item.content {
            case let .file(file): try await sendFile(file.source, from: lower, to: upper, reply: reply) { sent += $0; meter.add($0) }
            case let .directory(files, layout): try await sendZip(files, layout, reply: reply) { sent += $0; meter.add($0) }
            }
            bodyWritten = true
            try await reply.end()
            try await reply.drained()
        } catch {
            failure = error
        }
        // The body has a Content-Length: once every byte of it was written, the end of the response
        // adds none, so a client that closed as soon as it had them all (as a resuming download
        // does) got the whole file.
        let complete = sent == upper - lower && (failure == nil || bodyWritten)
        if complete { failure = nil }
        // What was sent counts even when the response was cut: a browser that resumes with
        // `Range: bytes=N-` holds the first N bytes, and cannot hold more than were sent.
        let all = coverage.withLock { coverage -> Bool in
            if size == 0 {
                if complete { coverage.done0.insert(index) }
            } else if case .file = item.content {
                coverage.add(index, lower..<(lower + sent))
            } else if complete {
                coverage.add(index, 0..<size)
            }
            return coverage.allComplete
        }
        events.emit(Events.WebDownload(
            address: request.address, userAgent: request.headers.first(name: "User-Agent") ?? "", path: item.downloadName,
            bytes: sent, total: upper - lower, offset: lower, complete: complete, allDone: all))
        if all { finish.yield() }
        if let failure { throw failure }
        return true
    }

    func itemModified(_ item: WebShareItem) -> Double {
        switch item.content {
        case let .file(file): file.modified
        case let .directory(files, _): files.map(\.modified).max() ?? 0
        }
    }

    /// `attachment` with an ASCII fallback and the UTF-8 name (RFC 6266, RFC 8187).
    static func disposition(_ name: String) -> String {
        let ascii = String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(WebPages.percent(name))"
    }

    /// Bytes `lower..<upper` of `path`, read off the event loops a block at a time.
    func sendFile(_ path: String, from lower: UInt64, to upper: UInt64, reply: WebReply, sent: (UInt64) -> Void) async throws {
        guard budget.takeDescriptors(1) else { throw NearbyError.transferFailed(path: path, code: "busy", reason: "no descriptor to spare") }
        defer { budget.giveDescriptors(1) }
        let fd = try await Self.openForReading(path)
        defer { close(fd) }
        var offset = lower
        while offset < upper {
            let count = Int(min(UInt64(Self.block), upper - offset))
            let buffer = try await Self.read(fd, count: count, at: offset, path: path)
            try await reply.chunk(buffer)
            offset += UInt64(count)
            sent(UInt64(count))
        }
    }

    /// The directory as a stored zip: each entry's header, its bytes (their CRC-32 taken on the
    /// way), its data descriptor; then the central directory.
    func sendZip(_ files: [OutgoingFile], _ layout: ZipLayout, reply: WebReply, sent: (UInt64) -> Void) async throws {
        var crcs: [UInt32] = []
        for (index, file) in files.enumerated() {
            let header = layout.localHeader(index)
            try await reply.chunk(ByteBuffer(bytes: header))
            sent(UInt64(header.count))
            var crc: UInt32 = 0
            if file.directory != true {
                guard budget.takeDescriptors(1) else { throw NearbyError.transferFailed(path: file.source, code: "busy", reason: "no descriptor to spare") }
                defer { budget.giveDescriptors(1) }
                let fd = try await Self.openForReading(file.source)
                defer { close(fd) }
                var offset: UInt64 = 0
                while offset < file.size {
                    let count = Int(min(UInt64(Self.block), file.size - offset))
                    let buffer = try await Self.read(fd, count: count, at: offset, path: file.source)
                    crc = buffer.withUnsafeReadableBytes { ZipLayout.crc32(crc, $0) }
                    try await reply.chunk(buffer)
                    offset += UInt64(count)
                    sent(UInt64(count))
                }
            }
            crcs.append(crc)
            let descriptor = layout.descriptor(index, crc: crc)
            try await reply.chunk(ByteBuffer(bytes: descriptor))
            sent(UInt64(descriptor.count))
        }
        let central = layout.centralDirectory(crcs: crcs)
        try await reply.chunk(ByteBuffer(bytes: central))
        sent(UInt64(central.count))
    }

    /// `path`, opened for reading on the core's `Blocking` pool (closing a file only read is cheap:
    /// done where it ends).
    static func openForReading(_ path: String) async throws -> Int32 {
        let fd = try await Blocking.run { _ -> Int32 in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            return fd >= 0 ? fd : -errno
        }
        guard fd >= 0 else { throw NearbyError.ioFailure(path: path, reason: Transfer.errorText(-fd)) }
        return fd
    }

    /// Exactly `count` bytes at `offset` (a file that shrank while it is served fails the download),
    /// read on the core's `Blocking` pool.
    static func read(_ fd: Int32, count: Int, at offset: UInt64, path: String) async throws -> ByteBuffer {
        try await Blocking.run { _ in
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer -> Int in
                guard let base = pointer.baseAddress else { return 0 }
                var done = 0
                while done < count {
                    let n = pread(fd, base + done, count - done, off_t(offset) + off_t(done))
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { break }
                    done += n
                }
                return done
            }
            guard got == count else { throw NearbyError.ioFailure(path: path, reason: "it changed while it was being served") }
            return buffer
        }
    }
}

/// `progress` events for one download, at most ~10 a second.
final class Meter: @unchecked Sendable {
    // Used by the one task that serves the download.
    let events: any EventSink
    let transfer: String
    let peer: PeerRef
    let path: String
    let total: UInt64
    var bytes: UInt64 = 0
    let started = ContinuousClock.now
    var pacer = ProgressPacer(since: .now)

    init(events: any EventSink, transfer: String, peer: PeerRef, path: String, total: UInt64) {
        self.events = events
        self.transfer = transfer
        self.peer = peer
        self.path = path
        self.total = total
    }

    func add(_ count: UInt64) {
        bytes += count
        guard pacer.due(final: bytes == total) else { return }
        events.emit(Events.Progress(
            transfer: transfer, direction: "send", peer: peer, path: path, bytes: bytes, total: total,
            rate: Transfer.rate(bytes, Transfer.seconds(since: started))))
    }
}
