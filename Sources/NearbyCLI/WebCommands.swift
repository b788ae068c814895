import ArgumentParser
import NearbyCore
import NearbyWeb
import NearbyBase
import NearbyTransfer

/// `--web` (send-file, accept, advertise): the command serves a page to any device with a browser
/// on the LAN, behind an unguessable token, instead of (or beside) talking to nearby peers.
struct WebOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "Serve a web page for any device with a browser: a link with a secret token, and a QR code at a terminal.",
        discussion: "Plain HTTP on the LAN; the token in the link is the only key. See docs/web.md."))
    var web = false
}

/// The commands with a web drop box (accept, advertise): what it takes.
struct WebDropOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "With --web, take uploaded files whose names start with '.' (refused by default).",
        discussion: "A hidden file such as .bashrc or .bash_profile could change how programs run in the save directory."))
    var allowDotfiles = false

    func validate(web: Bool) throws {
        if allowDotfiles, !web { throw ValidationError("--allow-dotfiles is for --web") }
    }
}

/// The web side of each command: the same events, errors and exit codes as nearby's own.
enum WebCommands {
    /// `send-file --web PATH...`: until every item was downloaded whole (or, with `keep`, until
    /// Ctrl-C or `timeout`).
    static func share(_ context: CommandContext, paths: [String], device: String, keep: Bool, timeout: Double?) async throws {
        let files = try FileList.collect(paths) { context.events.emit(Events.Skipped($0)) }
        let items = try WebShareItem.items(files)
        let token = WebToken.random()
        let server = try await WebServer.bind(
            port: port(context), admission: Admission(limits: .web(environment: context.environment)))
        let share = WebShare(token: token, device: device, items: items, events: context.events)
        announce(context, server: server, token: token, mode: "send", items: items.count, saveDir: nil)
        let what = keep ? "serving files to browsers" : "waiting for browsers to download every file"
        // Every item downloaded whole: the answer that completed it is in the kernel already
        // (WebReply.drained); others still going get up to 2 s before the server closes them.
        var allDownloaded: (@Sendable () async -> Void)?
        if !keep {
            allDownloaded = { @Sendable in
                for await _ in share.finished {
                    await settle { share.answering == 0 }
                    return
                }
            }
        }
        let finished = allDownloaded
        do {
            try await interruptible(what) {
                try await serve(server, share, until: finished, timeout: timeout) {
                    NearbyError.transferFailed(
                        path: items.map(\.downloadName).joined(separator: ", "), code: .notDownloaded,
                        reason: "not every file was downloaded in full within \(timeout ?? 0) s")
                }
            }
        } catch let error as NearbyError where keep && error.isCancellation {
            return
        }
    }

    /// `accept --web --save-dir DIR`: until Ctrl-C, `timeout`, or `count` files received.
    static func receive(
        _ context: CommandContext, saveDir: String?, device: String, count: Int?, timeout: Double?, allowDotfiles: Bool
    ) async throws {
        guard let saveDir else {
            throw NearbyError.invalidArgument("--web takes files only with --save-dir (or NEARBY_SAVE_DIR): where should they go?")
        }
        // The strangers' quota, as a node keeps it; a partial an earlier run left (a crash during an
        // upload) is deleted as this starts, and the sweep runs while it serves.
        let partials = PartialFiles(limits: .from(environment: context.environment))
        let server = try await WebServer.bind(
            port: port(context), admission: Admission(limits: .web(environment: context.environment)))
        let (token, box) = dropBox(context, saveDir: saveDir, device: device, partials: partials, allowDotfiles: allowDotfiles)
        announce(context, server: server, token: token, mode: "receive", items: nil, saveDir: saveDir)
        var until: (@Sendable () async -> Void)?
        if let wanted = count {
            until = { @Sendable in
                for await got in box.received {
                    if got >= wanted {
                        // The browser still gets its answer.
                        await settle { box.uploading == 0 }
                        return
                    }
                }
            }
        }
        let counted = until
        do {
            try await interruptible("receiving files from browsers") {
                try await serve(server, box, until: counted, timeout: timeout, beside: { await partials.sweepUntilCancelled(adopting: saveDir) }) {
                    // Only with --count: the files it waited for did not all come.
                    NearbyError.noInvitation(from: "a browser (\(count ?? 0) file\(count == 1 ? "" : "s") expected)", seconds: timeout ?? 0)
                }
            }
        } catch let error as NearbyError where error.isCancellation && box.uploading == 0 {
            return
        }
    }

    /// `advertise --web`: the upload page beside the node, into its --save-dir, on the node's own
    /// admission and strangers' quota (one table of strangers' connections, one account each).
    /// (A LocalSend node's too: `advertise --localsend --web`.)
    static func dropBox(
        _ context: CommandContext, saveDir: String?, device: String, partials: PartialFiles, admission: Admission, allowDotfiles: Bool
    ) async throws -> (WebServer, WebDropBox) {
        guard let saveDir else {
            throw NearbyError.invalidArgument("--web needs --save-dir (or NEARBY_SAVE_DIR): where should uploads go?")
        }
        let server = try await WebServer.bind(port: port(context), admission: admission)
        let (token, box) = dropBox(context, saveDir: saveDir, device: device, partials: partials, allowDotfiles: allowDotfiles)
        announce(context, server: server, token: token, mode: "receive", items: nil, saveDir: saveDir)
        return (server, box)
    }

    /// The upload page into `saveDir`, its files through `partials` (a body at most their quota),
    /// counted per address (`NEARBY_WEB_FILES_PER_ADDRESS`).
    static func dropBox(
        _ context: CommandContext, saveDir: String, device: String, partials: PartialFiles, allowDotfiles: Bool
    ) -> (WebToken, WebDropBox) {
        let token = WebToken.random()
        let receiving = DiskReceiving(
            directory: saveDir, partials: partials, counts: .from(environment: context.environment), allowDotfiles: allowDotfiles,
            events: context.events)
        return (token, WebDropBox(token: token, device: device, receiving: receiving, maxBody: partials.limits.bytes + 64 * 1024))
    }

    /// Runs `site` until `until` returns (nil: never), or `timeout` passes: then `late` is thrown
    /// when `until` was given, else the command ends well.
    static func serve(
        _ server: WebServer, _ site: some WebSite, until: (@Sendable () async -> Void)?, timeout: Double?,
        beside: (@Sendable () async -> Void)? = nil, late: @escaping @Sendable () -> NearbyError
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await server.run(site) }
            // Work that runs until cancelled, beside the server.
            if let beside { group.addTask { await beside() } }
            if let until { group.addTask { await until() } }
            if let timeout {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                    if until != nil { throw late() }
                }
            }
            defer { group.cancelAll() }
            _ = try await group.next()
        }
    }

    /// Waits (at most 2 s) for `done`.
    static func settle(_ done: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(2)
        while !done(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// `NEARBY_WEB_PORT`, else any free port.
    static func port(_ context: CommandContext) -> Int {
        context.environment["NEARBY_WEB_PORT"].flatMap(Int.init).flatMap { (0...65535).contains($0) ? $0 : nil } ?? 0
    }

    /// The `web-serving` event, and at a terminal the QR code of the first URL with the URLs beneath.
    static func announce(_ context: CommandContext, server: WebServer, token: WebToken, mode: String, items: Int?, saveDir: String?) {
        let urls = WebAddresses.urls(port: server.port, token: token, environment: context.environment)
        context.events.emit(Events.WebServing(urls: urls, port: server.port, mode: mode, items: items, saveDir: saveDir))
        guard let terminal = context.terminal, terminal.stderrIsTerminal || context.environment["NEARBY_WEB_QR"] == "1",
              let first = urls.first, let code = QRCode(first)
        else { return }
        let verb = mode == "send" ? "download the files" : "send files here"
        terminal.log(code.terminalLines().joined(separator: "\n") + "\n" + "Scan or open to \(verb):\n"
            + urls.map { "  " + $0 }.joined(separator: "\n") + "\n")
    }
}
