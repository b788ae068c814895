import NIOCore
import NIOHTTP1
import NearbyHTTP
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
            if group.count == 1, var only = group.first, only.relative == top, only.directory != true {
                // A path given as a link is served as what it named when it was listed: its target
                // (opened without following links, `ListedFile`).
                only.source = resolved(only.source)
                return WebShareItem(name: top, content: .file(only))
            }
            // Entry names cleaned as upload names are (`SafePath`: no `\`, `..`, control or bidi
            // characters): an extractor that takes `\` for a separator is not led out of its directory.
            // Two that clean to one name (`a\b` and `a/b`) are told apart as uploads are (`b (1)`).
            let names = zipNames(group.map { SafePath.relative($0.relative) })
            let entries = zip(group, names).map { file, name in
                ZipLayout.Entry(name: name, size: file.size, modified: file.modified, directory: file.directory == true)
            }
            guard let layout = ZipLayout(entries) else {
                throw .invalidArgument("\(top): too large for one .zip (4 GiB or 65,535 entries): share the files inside it instead")
            }
            return WebShareItem(name: top, content: .directory(group, layout))
        }
    }

    /// Cleaned entry names, each one distinct: a name met before gets the collision suffix an
    /// upload gets in its last part (`SafePath.candidate`: `name (1).ext`, within 255 bytes).
    static func zipNames(_ cleaned: [String]) -> [String] {
        var used = Set<String>()
        return cleaned.map { name in
            var parts = name.split(separator: "/").map(String.init)
            let last = parts.popLast() ?? "unnamed"
            let folder = parts.isEmpty ? "" : parts.joined(separator: "/") + "/"
            var n = 0
            var candidate = name
            while used.contains(candidate) {
                n += 1
                candidate = folder + SafePath.candidate(last, n)
            }
            used.insert(candidate)
            return candidate
        }
    }

    /// `path` with every link in it resolved (itself when it cannot be).
    static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }
}

/// `send-file --web`: the page and the downloads, with events; `finished` yields once every item
/// was downloaded whole.
package final class WebShare: WebSite {
    package let token: WebToken
    package let device: String
    package let items: [WebShareItem]
    let events: any EventSink
    let budget: ResourceBudget
    let coverage: Locked<Coverage>
    let active = Locked(0)
    /// Files said in a `skipped` event (each once).
    let skippedPaths = Locked<Set<String>>([])
    package let finished: AsyncStream<Void>
    let finish: AsyncStream<Void>.Continuation
    static let block = 256 * 1024

    package init(token: WebToken, device: String, items: [WebShareItem], events: any EventSink, budget: ResourceBudget = .shared) {
        self.token = token
        self.device = device
        self.items = items
        self.events = events
        self.budget = budget
        coverage = Locked(Coverage(sizes: items.map(\.size)))
        (finished, finish) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Downloads being answered now.
    package var answering: Int { active.withLock { $0 } }

    package func answer(_ request: WebRequest, body: HTTPBody, reply: WebReply) async throws -> Bool {
        let route = WebRoute.of(method: request.method, uri: request.uri, token: token, items: items.count, uploads: false)
        switch route {
        case .notFound, .upload:
            try await reply.notFound()
            return false
        case .page, .item:
            // Only from the page itself or from no page (`CrossSite`); nothing of a refused body is read.
            if let refusal = request.crossSite {
                try await reply.text("Refused: \(refusal)", status: .forbidden, close: true)
                return false
            }
        }
        switch route {
        case .notFound, .upload:
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
        // Only what was listed: the file opened now (once, for the whole answer), a zip's entries
        // checked now; anything swapped since is a 410 in words.
        var opened: Int32?
        var zip: ([OutgoingFile], ZipLayout)?
        switch item.content {
        case let .file(file):
            switch await openListed(file) {
            case let .success(fd): opened = fd
            case let .failure(refusal):
                skip(item.name, refusal)
                try await reply.text("\(item.downloadName) is no longer shared: \(refusal.words).", status: .gone)
                return true
            }
        case let .directory(files, layout):
            zip = zipAsListed(files, layout)
            if zip == nil {
                try await reply.text("\(item.downloadName) is no longer shared: nothing in it is as it was when it was shared.", status: .gone)
                return true
            }
        }
        defer { if let opened { release(opened) } }
        let size = zip?.1.totalSize ?? item.size
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
            if let opened, case let .file(file) = item.content {
                try await sendFile(opened, path: file.source, from: lower, to: upper, reply: reply) { sent += $0; meter.add($0) }
            } else if let (files, layout) = zip {
                try await sendZip(files, layout, reply: reply) { sent += $0; meter.add($0) }
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
                if complete { coverage.done(index) }
            } else if case .file = item.content {
                coverage.add(index, lower..<(lower + sent), client: request.address)
            } else if complete {
                // A zip without what was swapped since counts as the whole item: nothing more can be had.
                coverage.add(index, 0..<item.size, client: request.address)
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
}
