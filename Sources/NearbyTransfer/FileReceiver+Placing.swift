import Foundation

import NearbyBase
import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The end of an incoming file: the sender's close checked on the link's task, then the file put in
/// place off it, so that the link reads the next files' frames meanwhile and the files that finish
/// together are made durable by one sync (`GroupSync`). Nothing is under the final name before its
/// SHA-256 matched and its bytes are on stable storage (docs/durability.md).
extension FileReceiver {
    func end(_ end: FrameBody.Close, on link: any ChannelPort) async {
        if end.alreadyThere == true, progress.withLock({ !$0.machine.started }) { return await keep(end, on: link) }
        guard let writer = progress.withLock({ $0.writer }) else {
            return await fail(on: link, code: .integrity, reason: "the file ended before it started")
        }
        let (hasher, failure) = await writer.finish()
        if failure != 0 { return await failed(on: link, writing: failure) }
        let sha = Transfer.hex(hasher.finalize())
        switch progress.withLock({ $0.machine.ending(announced: end.bytes, theirs: end.sha256, ours: sha) }) {
        case .place: break
        case let .fail(reason): return await fail(on: link, code: .integrity, reason: reason)
        }
        // Complete and verified: the file is ours to place now, whatever the peer does next (its
        // reset, or the link lost, finds the file closed and leaves it alone). Its channel stays in
        // the link's table until it is placed, so a peer has at most a session's channels waiting.
        let (skipped, started, reported) = progress.withLock { progress in
            let skipped = progress.machine.skipped
            progress.writer = nil
            _ = try? progress.machine.close(announced: end.bytes)
            return (skipped, progress.started, progress.reported)
        }
        // Every write is done: the descriptor is ours again. Private while incomplete; the usual
        // mode (0666 less the umask) once it is a real file.
        _ = fchmod(writer.descriptor, Transfer.finishedMode)
        services.spawn { [self] in await place(writer, sha: sha, skipped: skipped, started: started, reported: reported, on: link) }
    }

    /// Makes the file durable, then gives it its final name — `name.ext`, else `name (1).ext` …, or
    /// the copy already there — and tells both sides.
    private func place(
        _ writer: FileWriter, sha: String, skipped: UInt64, started: ContinuousClock.Instant, reported: UInt64, on link: any ChannelPort
    ) async {
        // The sender's modification time, made durable with the data (a time that does not fit is
        // left alone: the file keeps the time it was written at).
        if let time = FileTimes.modification(modified) { _ = futimens(writer.descriptor, time) }
        let synced = await GroupSync.shared.sync(writer.descriptor)
        close(writer.descriptor)
        // The writer's place in the budget covers the look for a copy already there (one open at a
        // time), and is given back before the sender hears the answer: a sender that starts its
        // next file on our close finds the place free.
        let placed: String
        // The same file sent again, its complete copy already there: no second copy. Not looked
        // for when our answer said that copy's hash and it is another.
        let held = progress.withLock { $0.machine.held }
        var existing: String?
        if held == nil || held == sha { existing = await AlreadyThere.copy(of: sha, size: size, in: directory, as: name) }
        do {
            guard synced else { throw NearbyError.ioFailure(path: partial, reason: "fsync failed") }
            if let existing {
                unlink(partial)
                placed = existing
            } else {
                placed = try SafePath.placeWithoutOverwriting(partial, in: directory, as: name)
            }
        } catch {
            writer.charge?.release()
            return await unplaced(on: link, reason: (error as? NearbyError)?.errorDescription ?? "cannot place the file")
        }
        writer.charge?.release()
        link.endChannel(channel)
        services.partials.gone(partial, deleted: existing != nil)
        services.partials.release(partial)
        let seconds = Transfer.seconds(since: started)
        // The last progress says the whole file, once: a data frame's may have said it already.
        if size > 0, reported < size {
            services.events.emit(Events.Progress(
                transfer: transfer, direction: "receive", peer: peer, path: relative, bytes: size,
                total: size, rate: Transfer.rate(size - skipped, seconds)))
        }
        services.events.emit(Events.FileReceived(
            transfer: transfer, peer: peer, path: placed, bytes: size, skipped: skipped, sha256: sha, seconds: seconds,
            alreadyThere: existing != nil ? true : nil))
        // The name it was saved under, when not its own (`x (1).txt`): the sender's events tell two
        // files of one name apart.
        let savedAs = placed.split(separator: "/").last.map(String.init)
        await link.confirm(
            FrameBody.Close(sha256: sha, bytes: size, alreadyThere: existing != nil ? true : nil, savedAs: savedAs == name ? nil : savedAs),
            on: channel)
    }

    /// The sender's close without data: its file's SHA-256 is the one we said our copy at that name
    /// has (`OpenReply.heldSHA256`), so that copy stays, and nothing else is made. Any other close
    /// before data is refused as a file that ended before it started.
    private func keep(_ end: FrameBody.Close, on link: any ChannelPort) async {
        let kept = progress.withLock { progress -> (Bool, ContinuousClock.Instant) in
            do throws(FileReceiveMachine.Illegal) {
                try progress.machine.keep(sha256: end.sha256, announced: end.bytes)
                return (true, progress.started)
            } catch {
                return (false, progress.started)
            }
        }
        guard kept.0 else {
            return await fail(on: link, code: .integrity, reason: "the sender said the file is already here, and it is not the one here")
        }
        link.endChannel(channel)
        // What an interrupted attempt at this file left is of no use now that it is complete here.
        if unlink(partial) == 0 { services.partials.gone(partial, deleted: true) }
        services.partials.release(partial)
        services.events.emit(Events.FileReceived(
            transfer: transfer, peer: peer, path: directory + "/" + name, bytes: size, skipped: size, sha256: end.sha256,
            seconds: Transfer.seconds(since: kept.1), alreadyThere: true))
        await link.confirm(FrameBody.Close(sha256: end.sha256, bytes: size, alreadyThere: true), on: channel)
    }

    /// A complete file that could not be made durable or placed: nothing is kept, both sides hear why.
    private func unplaced(on link: any ChannelPort, reason: String) async {
        unlink(partial)
        services.partials.gone(partial, deleted: true)
        services.partials.release(partial)
        link.endChannel(channel)
        services.events.emit(Events.FileFailed(
            transfer: transfer, direction: "receive", peer: peer, path: relative, code: "io-error", reason: reason, resumable: false))
        await link.reset(FrameBody.Reset(reason: reason, code: .ioError), on: channel)
    }
}
