import Foundation
@testable import NearbyLocalSend

/// LocalSend v2: what a device says about itself (multicast, /register, /info) and the streaming
/// reader of a prepare-upload body (the list of files offered).
enum LocalSendTargets {
    static let all = [
        FuzzTarget(name: "localsend-device", run: device),
        FuzzTarget(name: "localsend-prepare-upload", run: prepareUpload),
    ]

    /// decode(encode(m)) == m for every device message that decodes.
    static func device(_ input: [UInt8]) {
        _ = JSONShape.depth(of: input, limit: LocalSendLimits.jsonDepth)
        for needsFingerprint in [true, false] {
            guard let message = DeviceMessage.decode(input, limit: 64 << 10, needsFingerprint: needsFingerprint) else { continue }
            let again = DeviceMessage.decode(message.encoded(), limit: 1 << 20, needsFingerprint: needsFingerprint)
            Fuzz.check(again == message, "a device message encoded again decodes as \(String(describing: again)), not \(message)")
            _ = LocalSendDevice(message, host: "192.0.2.1", interface: "eth0")
        }
    }

    struct Read: Equatable {
        var entries: [PrepareUploadList.Entry] = []
        var failure: PrepareUploadList.Failure?
        var info: [UInt8]?
        var finished: PrepareUploadList.Failure?
    }

    static func read(_ reads: [ArraySlice<UInt8>]) -> Read {
        var limits = PrepareUploadList.Limits()
        limits.maxFiles = 64
        limits.entryBytes = 2048
        limits.fieldBytes = 1024
        limits.textBytes = 4096
        var list = PrepareUploadList(limits: limits)
        var out = Read()
        do {
            for read in reads { out.entries += try list.feed(read) }
        } catch {
            return Read(failure: error)  // fed whole, a failing read returns no entries
        }
        do { out.info = try list.finish() } catch { out.finished = error }
        return out
    }

    /// The body in random cuts gives the entries, the info and the failure it gives whole; each
    /// entry's key is distinct, and there are no more than the limit.
    static func prepareUpload(_ input: [UInt8]) {
        let (whole, pieces) = Fuzz.pieces(input)
        let atOnce = read([whole[...]])
        let inPieces = read(pieces)
        Fuzz.check(atOnce == inPieces, "prepare-upload in pieces: \(inPieces), whole: \(atOnce)")
        Fuzz.check(Set(atOnce.entries.map(\.key)).count == atOnce.entries.count, "a file key twice: \(atOnce.entries.map(\.key))")
        Fuzz.check(atOnce.entries.count <= 64, "\(atOnce.entries.count) entries over the limit of 64")
        if let info = atOnce.info { _ = DeviceMessage.decode(info, limit: 64 << 10, needsFingerprint: false) }
    }
}
