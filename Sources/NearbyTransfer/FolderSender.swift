import Foundation
import NearbyBase

/// The files of one `send-file`, many at once (`FilesInFlight`): `sendOne` sends one (its channel,
/// `FileSender`, its events) and is run for each file as the limits let it be offered; to a peer
/// that takes bundles, `sendBundle` sends the small ones together (`BundleSender`, `units`). Of
/// those in flight, `StartPermits` lets `started` files send their bytes at once (a bundle holds
/// as many places as its receiver may keep files open). After a failure no further file starts;
/// those in flight finish, and the first failure is thrown.
package enum FolderSender {
    /// The limits from the environment: `NEARBY_FILES_IN_FLIGHT` (1 sends one file, or one bundle, after another;
    /// the files sending at once are at most 16 of them) and `NEARBY_BYTES_IN_FLIGHT`.
    package static var limits: FilesInFlight.Limits {
        let environment = ProcessInfo.processInfo.environment
        var limits = FilesInFlight.Limits()
        if let files = environment["NEARBY_FILES_IN_FLIGHT"].flatMap(Int.init), files > 0 {
            limits = FilesInFlight.Limits(files: min(files, 64), started: limits.started, bytes: limits.bytes)
        }
        if let bytes = environment["NEARBY_BYTES_IN_FLIGHT"].flatMap(UInt64.init), bytes > 0 { limits.bytes = bytes }
        return limits
    }

    /// Whether small files may go in bundles: `NEARBY_BUNDLES=0` sends each alone.
    static let bundling = ProcessInfo.processInfo.environment["NEARBY_BUNDLES"] != "0"

    /// Sends one file; it takes one of `permits` before its first byte (`FileSender`).
    package typealias SendOne = @Sendable (OutgoingFile, Events.Progress.Batch?, StartPermits) async throws(NearbyError) -> Void
    /// Sends small files as one bundle (`BundleSender`), holding places of `permits` while it sends.
    package typealias SendBundle = @Sendable ([(OutgoingFile, Events.Progress.Batch?)], StartPermits) async throws(NearbyError) -> Void

    /// What goes at once: a file on a channel of its own, or small files together in a bundle.
    enum Unit: Equatable, Sendable {
        case one(Int)
        case bundle([Int])
    }

    /// The files as they go: with bundles, the small ones (`Bundle.maxFileBytes`) gathered in
    /// order, up to `Bundle.maxFiles` files and `Bundle.maxBytes` a bundle; the others alone.
    static func units(_ files: [OutgoingFile], bundling: Bool) -> [Unit] {
        guard bundling else { return files.indices.map { .one($0) } }
        var units: [Unit] = []
        var gathered: [Int] = []
        var bytes: UInt64 = 0
        for (index, file) in files.enumerated() {
            // A path too long for a record (it would be cut, and the receiver refuses a cut one) goes alone.
            guard file.size <= Bundle.maxFileBytes, file.relative.utf8.count <= Bundle.maxPathBytes else {
                units.append(.one(index))
                continue
            }
            if gathered.count == Bundle.maxFiles || bytes + file.size > Bundle.maxBytes {
                units.append(.bundle(gathered))
                gathered = []
                bytes = 0
            }
            gathered.append(index)
            bytes += file.size
        }
        if !gathered.isEmpty { units.append(.bundle(gathered)) }
        return units
    }

    package static func send(
        _ files: [OutgoingFile], limits: FilesInFlight.Limits = FolderSender.limits, bundle sendBundle: SendBundle? = nil, _ sendOne: @escaping SendOne
    ) async throws(NearbyError) {
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        // Several files: each progress event also says where the whole batch is.
        var batches: [Events.Progress.Batch?] = []
        var before: UInt64 = 0
        for (index, file) in files.enumerated() {
            batches.append(files.count > 1 ? Events.Progress.Batch(file: index + 1, files: files.count, before: before, total: total) : nil)
            before += file.size
        }
        let batched = batches
        let units = units(files, bundling: sendBundle != nil)
        let sizes = units.map { unit -> UInt64 in
            switch unit {
            case let .one(index): files[index].size
            case let .bundle(indices): indices.reduce(UInt64(0)) { $0 + files[$1].size }
            }
        }
        let permits = StartPermits(limits.started)
        let failure = await withTaskGroup(of: (size: UInt64, failure: NearbyError?).self) { group -> NearbyError? in
            var flight = FilesInFlight(limits: limits)
            var next = 0
            var failure: NearbyError?
            while true {
                while failure == nil, next < units.count, flight.admits(sizes[next]) {
                    let unit = units[next], size = sizes[next]
                    next += 1
                    flight.started(size)
                    group.addTask {
                        do throws(NearbyError) {
                            switch unit {
                            case let .one(index): try await sendOne(files[index], batched[index], permits)
                            case let .bundle(indices): try await sendBundle?(indices.map { (files[$0], batched[$0]) }, permits)
                            }
                            return (size, nil)
                        } catch {
                            return (size, error)
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
