import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum Transfer {
    static let chunk = 256 << 10
    /// How far a sender may run ahead of what the receiver has written: memory stays bounded (one
    /// window per channel).
    static let window = ChannelMux.defaultWindow
    public static let progressInterval = Duration.milliseconds(100)
    /// 0666 less this process's umask (read once: setting it back at once is the only way to read it).
    static let finishedMode: mode_t = {
        let mask = umask(0o022)
        umask(mask)
        return 0o666 & ~mask
    }()

    static func hex(_ digest: some Sequence<UInt8>) -> String { Hex.encode(digest) }

    /// This sender's name for a file, the same on every attempt while the file is unchanged.
    static func key(sender: PeerID, file: OutgoingFile) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(sender.rawValue)\u{0}\(file.relative)\u{0}\(file.size)\u{0}\(file.modified)".utf8))
        return String(hex(hasher.finalize()).prefix(32))
    }

    /// Feeds the first `count` bytes of the file at `fd` to `hasher`.
    static func hash(_ fd: Int32, count: UInt64, into hasher: inout SHA256) -> Bool {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var done: UInt64 = 0
        while done < count {
            let want = Int(min(UInt64(buffer.count), count - done))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(done)) }
            guard got > 0 else { return false }
            hasher.update(data: buffer[0..<got])
            done += UInt64(got)
        }
        return true
    }

    public static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Seconds since `start`, to the millisecond.
    public static func seconds(since start: ContinuousClock.Instant) -> Double {
        ((ContinuousClock.now - start) / .milliseconds(1)).rounded() / 1000
    }

    /// Bytes per second, whole.
    public static func rate(_ bytes: UInt64, _ seconds: Double) -> Double { seconds > 0 ? (Double(bytes) / seconds).rounded() : 0 }
}

extension Node {
    // MARK: Sending

    /// Sends files to a peer (inviting it first if needed), one after another.
    public func sendFiles(
        _ files: [OutgoingFile], to query: String, timeout: Double, client: (any EventSink)?
    ) async throws(NearbyError) {
        let sink: any EventSink = client.map { TeeSink(events, $0) } ?? events
        let peer = try await invite(query, context: nil, timeout: timeout, client: client)
        // The files, then the empty directories of the trees (which carry no data and no events).
        let directories = files.filter { $0.directory == true }
        let files = files.filter { $0.directory != true }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        var before: UInt64 = 0
        for (index, file) in files.enumerated() {
            // Several files: each progress event also says where the whole batch is.
            let batch = files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil
            before += file.size
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            let channel = try link.openChannel { id in
                let channel = OutgoingChannel(id: id)
                return (.sending(channel), channel)
            }
            defer { link.channels.finish(channel.id) }
            try await FileSender.send(file, over: channel, link: link, sender: identity.peerID, sink: sink, batch: batch)
        }
        for directory in directories {
            guard let link = sessions[peer.id] else { throw .connectionFailed("the session with \(peer.id) ended") }
            let channel = try link.openChannel { id in
                let channel = OutgoingChannel(id: id)
                return (.sending(channel), channel)
            }
            defer { link.channels.finish(channel.id) }
            try await Self.make(directory, over: channel, link: link, sink: sink)
        }
    }
}

extension Control {
    static func frame(_ kind: Frame.Kind, _ body: some Encodable, channel: UInt32) -> Frame {
        var frame = frame(kind, body)
        frame.channel = channel
        return frame
    }
}
