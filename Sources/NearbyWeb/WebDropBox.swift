import NIOCore
import NIOHTTP1
import NearbyHTTP
import NearbyBase

/// `accept --web` and `advertise --web`: the upload page and its form's POST. A body is bounded
/// before it is read (a `Content-Length` is required, at most `maxBody`), parsed as it streams
/// (`MultipartParser`: part headers bounded, parts counted), and each file part lands through
/// `WebReceiving` (the node's receive-to-disk path). `received` yields the number of files placed
/// so far, keeping only the newest (bounded, read or not: `advertise --web` never reads it).
package final class WebDropBox: WebSite {
    package let token: WebToken
    package let device: String
    let receiving: any WebReceiving
    let maxBody: UInt64
    let maxFiles: Int
    package let received: AsyncStream<Int>
    let feed: AsyncStream<Int>.Continuation
    private let serial = Locked<UInt64>(0)
    private let total = Locked(0)
    private let active = Locked(0)

    /// Uploads being received now (Ctrl-C during one is not a clean end).
    package var uploading: Int { active.withLock { $0 } }

    package init(token: WebToken, device: String, receiving: any WebReceiving, maxBody: UInt64, maxFiles: Int = 1000) {
        self.token = token
        self.device = device
        self.receiving = receiving
        self.maxBody = maxBody
        self.maxFiles = maxFiles
        (received, feed) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
    }

    package func answer(_ request: WebRequest, body: HTTPBody, reply: WebReply) async throws -> Bool {
        let route = WebRoute.of(method: request.method, uri: request.uri, token: token, items: 0, uploads: true)
        switch route {
        case .notFound, .item:
            try await reply.notFound()
            return false
        case .page, .upload:
            // Only from the page itself or from no page (`CrossSite`); nothing of a refused body is read.
            if let refusal = request.crossSite {
                try await reply.text("Refused: \(refusal)", status: .forbidden, close: true)
                return false
            }
        }
        switch route {
        case .notFound, .item:
            return false
        case .page:
            try await reply.page(WebPages.upload(device: device), head: request.method == "HEAD", script: true)
            return true
        case .upload:
            // Counted until the answer is out: `accept --web --count N` waits for it before it ends.
            active.withLock { $0 += 1 }
            defer { active.withLock { $0 -= 1 } }
            let outcome = await upload(request, body: body)
            let plain = request.headers.first(name: "Accept")?.hasPrefix("text/plain") == true
            let status: HTTPResponseStatus = outcome.failure == nil ? .ok : outcome.status
            if plain {
                try await reply.text(outcome.sentence, status: status, close: !outcome.bodyRead)
            } else {
                try await reply.page(WebPages.upload(device: device, message: outcome.sentence), status: status, close: !outcome.bodyRead, script: true)
            }
            if !outcome.bodyRead { await Self.linger(body) }
            try await reply.drained()
            return outcome.bodyRead
        }
    }

    /// What a browser sends after a refusal is read and dropped (at most `lingerBytes`, for at most
    /// `lingerTime`) before the connection closes: closed on unread bytes, the socket would send a
    /// reset, and the browser would show "connection reset" instead of the answer.
    static let lingerBytes = 8 << 20
    static let lingerTime: Duration = .seconds(2)

    static func linger(_ body: HTTPBody) async {
        _ = await firstResult(within: lingerTime) { () -> Void? in
            var dropped = 0
            while dropped < lingerBytes, let chunk = try? await body.chunk() { dropped += chunk.readableBytes }
            return ()
        }
    }

    /// An upload's failure in words for the browser: never a path on this device (a disk error names
    /// the partial file's; the browser is told only what went wrong).
    static func words(_ error: NearbyError) -> String {
        switch error {
        case let .ioFailure(_, reason): "the file could not be written on this device (\(reason))."
        default: (error.errorDescription ?? error.code) + "."
        }
    }

    struct Outcome {
        var placed: [String] = []
        var failure: String?
        var status: HTTPResponseStatus = .badRequest
        /// The whole body was read: the connection can carry another request.
        var bodyRead = false

        var sentence: String {
            let names = placed.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
            let got = names.isEmpty ? "" : "Received \(names.count) file\(names.count == 1 ? "" : "s"): \(names.joined(separator: ", ")). "
            return got + (failure.map { "Not received: \($0)" } ?? (names.isEmpty ? "No file was sent." : ""))
        }
    }

    func upload(_ request: WebRequest, body: HTTPBody) async -> Outcome {
        var outcome = Outcome()
        guard let length = request.headers.first(name: "Content-Length").flatMap(UInt64.init) else {
            outcome.failure = "the browser gave no Content-Length."
            outcome.status = .lengthRequired
            return outcome
        }
        guard length <= maxBody else {
            outcome.failure = "the files are larger than the \(WebPages.size(maxBody)) this device takes at once."
            outcome.status = .payloadTooLarge
            return outcome
        }
        guard let boundary = MultipartParser.boundary(ofContentType: request.headers.first(name: "Content-Type")),
              var parser = MultipartParser(boundary: boundary, maxParts: maxFiles)
        else {
            outcome.failure = "not a form upload (multipart/form-data)."
            return outcome
        }
        var file: (any WebIncomingFile)?
        // A file's bytes go to its writer in blocks, not chunk by chunk.
        var blocks = BodyBlocks()
        var read: UInt64 = 0
        do {
            while let chunk = try await body.chunk() {
                read += UInt64(chunk.readableBytes)
                guard read <= length else { throw MultipartParser.Failure.partLargerThanDeclared }
                for event in try parser.feed(chunk) {
                    switch event {
                    case let .begin(_, filename?):
                        let transfer = serial.withLock { value -> String in
                            value += 1
                            return "web-up-\(value)-\(UInt32.random(in: 0...UInt32.max))"
                        }
                        file = try await receiving.begin(name: filename.isEmpty ? "unnamed" : filename, from: request.address, transfer: transfer)
                    case .begin(_, nil):
                        file = nil
                    case let .data(data):
                        guard let file else { break }
                        for due in blocks.add(data) { try await file.write(due) }
                    case .end:
                        if let done = file {
                            if let rest = blocks.rest() { try await done.write(rest) }
                            file = nil
                            let placed = try await done.finish()
                            outcome.placed.append(placed)
                            feed.yield(total.withLock { count in
                                count += 1
                                return count
                            })
                        }
                    }
                }
            }
            outcome.bodyRead = true
            try parser.finish()
            outcome.status = .ok
        } catch let error as NearbyError {
            await file?.abandon(error)
            outcome.failure = Self.words(error)
            outcome.status = HTTPAnswer.status(refusing: error)
        } catch let error as MultipartParser.Failure {
            let reason: String
            switch error {
            case let .malformed(why): reason = "the form was malformed (\(why))."
            case .headerTooLarge: reason = "a part's header is too large."
            case .tooManyParts: reason = "more than \(maxFiles) parts in one form."
            case .partLargerThanDeclared: reason = "a part was larger than it declared."
            }
            await file?.abandon(.transferFailed(path: file?.name ?? "", code: .malformed, reason: reason))
            outcome.failure = reason
        } catch {
            await file?.abandon(.connectionFailed("the browser at \(request.address) stopped sending"))
            outcome.failure = "the connection ended early."
        }
        return outcome
    }
}
