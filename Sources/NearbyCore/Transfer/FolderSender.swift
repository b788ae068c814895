import Foundation

/// The files of one `send-file`, many at once (`FilesInFlight`): `sendOne` sends one (its channel,
/// `FileSender`, its events) and is run for each file as the limits let it be offered; of those,
/// `StartPermits` lets `started` send their bytes at once. After a failure
/// no further file starts; those in flight finish, and the first failure is thrown.
enum FolderSender {
    /// The limits from the environment: `NEARBY_FILES_IN_FLIGHT` (1 sends one file after another,
    /// as before; the files sending at once are at most 16 of them) and `NEARBY_BYTES_IN_FLIGHT`.
    static var limits: FilesInFlight.Limits {
        let environment = ProcessInfo.processInfo.environment
        var limits = FilesInFlight.Limits()
        if let files = environment["NEARBY_FILES_IN_FLIGHT"].flatMap(Int.init), files > 0 {
            limits = FilesInFlight.Limits(files: min(files, 64), started: limits.started, bytes: limits.bytes)
        }
        if let bytes = environment["NEARBY_BYTES_IN_FLIGHT"].flatMap(UInt64.init), bytes > 0 { limits.bytes = bytes }
        return limits
    }

    /// Sends one file; it takes one of `permits` before its first byte (`FileSender`).
    typealias SendOne = @Sendable (OutgoingFile, Events.Progress.Batch?, StartPermits) async throws(NearbyError) -> Void

    static func send(_ files: [OutgoingFile], limits: FilesInFlight.Limits = FolderSender.limits, _ sendOne: @escaping SendOne) async throws(NearbyError) {
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        // Several files: each progress event also says where the whole batch is.
        var batches: [Events.Progress.Batch?] = []
        var before: UInt64 = 0
        for (index, file) in files.enumerated() {
            batches.append(files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil)
            before += file.size
        }
        let permits = StartPermits(limits.started)
        let failure = await withTaskGroup(of: (size: UInt64, failure: NearbyError?).self) { group -> NearbyError? in
            var flight = FilesInFlight(limits: limits)
            var next = 0
            var failure: NearbyError?
            while true {
                while failure == nil, next < files.count, flight.admits(files[next].size) {
                    let file = files[next], batch = batches[next]
                    next += 1
                    flight.started(file.size)
                    group.addTask {
                        do throws(NearbyError) {
                            try await sendOne(file, batch, permits)
                            return (file.size, nil)
                        } catch {
                            return (file.size, error)
                        }
                    }
                }
                guard let done = await group.next() else { break }
                flight.ended(done.size)
                if failure == nil { failure = done.failure }
            }
            return failure
        }
        if let failure { throw failure }
    }
}
