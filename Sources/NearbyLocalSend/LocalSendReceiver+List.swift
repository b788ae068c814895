import Foundation
import NearbyHTTP

/// A `prepare-upload`'s file list, read as it arrives (`PrepareUploadList`): a folder of thousands
/// of files fits, while what a stranger could make the node hold is refused at the entry that
/// crosses a bound — the count, the body's bytes, one entry's, its declared bytes against the
/// strangers' quota (charged as each entry is read) — and a list trickled more slowly than the
/// floor rate is ended. The answer is sent once the rest of the body is drained (at most the
/// body's bound more), so that a sender writing its whole list reads the sentence, not a reset.
extension LocalSendReceiver {
    /// What a prepare-upload said: its sender's `info` and its files, in the order sent.
    struct Offer: Sendable {
        var info: DeviceMessage
        var files: [PrepareUploadList.Entry]
        var total: UInt64
    }

    /// Reads the list, or the answer that refuses it.
    func readList(_ request: LocalSendRequest, body: HTTPBody) async throws -> Result<Offer, LocalSendAnswerBox> {
        var list = PrepareUploadList(limits: policy.list)
        var entries: [PrepareUploadList.Entry] = []
        var total: UInt64 = 0
        // Charged as a stranger's until its info shows a sender the user chose.
        var stranger = policy.autoAccept
        var knownSender = false
        let started = ContinuousClock.now
        let floor = LocalSendSessions.limits
        func refuse(_ answer: LocalSendAnswer) async throws -> Result<Offer, LocalSendAnswerBox> {
            try await drain(body, limit: policy.list.bodyBytes, started: started)
            var answer = answer
            answer.keepAlive = false
            return .failure(LocalSendAnswerBox(answer: answer))
        }
        while let chunk = try await body.chunk() {
            let allowed = floor.grace + .seconds(Double(list.bytes + chunk.readableBytes) / Double(max(1, floor.floorRate)))
            if ContinuousClock.now - started > allowed {
                return try await refuse(.status(408, "the file list came more slowly than \(floor.floorRate / 1024) KiB/s: refused"))
            }
            let read: [PrepareUploadList.Entry]
            do { read = try list.feed(chunk.readableBytesView) } catch {
                return try await refuse(.status(error.status, error.sentence))
            }
            if !knownSender, let info = list.info {
                knownSender = true
                if stranger, let message = DeviceMessage.decode(info, limit: policy.list.fieldBytes, needsFingerprint: false) {
                    stranger = !isPinned(LocalSendDevice(message, host: request.host, interface: nil), shown: request.clientFingerprint)
                }
            }
            for entry in read {
                total = total.addingReportingOverflow(entry.file.size).overflow ? .max : total + entry.file.size
                if stranger, let over = overQuota(bytes: total, files: entries.count + 1) { return try await refuse(over) }
                entries.append(entry)
            }
        }
        let infoBytes: [UInt8]
        do { infoBytes = try list.finish() } catch { return .failure(LocalSendAnswerBox(answer: .status(error.status, error.sentence))) }
        guard let info = try? JSONDecoder().decode(DeviceMessage.self, from: Data(infoBytes)) else {
            return .failure(LocalSendAnswerBox(answer: .status(400, "not a prepare-upload body: its info is not a device")))
        }
        return .success(Offer(info: info, files: entries, total: total))
    }

    /// Reads and drops the rest of a body: at most `limit` bytes, and no longer than the floor
    /// rate allows since `started`. Whatever is left unread, the connection is closed after the answer.
    func drain(_ body: HTTPBody, limit: Int, started: ContinuousClock.Instant = .now) async throws {
        var dropped = 0
        let floor = LocalSendSessions.limits
        while let chunk = try await body.chunk() {
            dropped += chunk.readableBytes
            let allowed = floor.grace + .seconds(Double(dropped) / Double(max(1, floor.floorRate)))
            if dropped > limit || ContinuousClock.now - started > allowed { return }
        }
    }
}

/// An answer as a `Result`'s failure.
struct LocalSendAnswerBox: Error, Sendable {
    var answer: LocalSendAnswer
}
