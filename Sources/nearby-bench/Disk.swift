// `nearby-bench disk DIR [MiB]`: the receiving side's disk work alone, without the network: MiB of
// data in 512 KiB pieces (a read's part of a data frame) through the receiver's own `FileWriter`
// (pwrite on one queue, SHA-256 on another, at most 8 MiB behind), then the fsync and the placing
// rename a received file gets, into a hidden partial file in DIR. Printed apart, in milliseconds and
// in MB/s, so that a slow disk and a slow network are told apart: when the disk alone is slower
// than a transfer's speed, the disk is the limit.
import Foundation
import NIOCore
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#endif

enum Disk {
    static func run(directory: String, mebibytes: Int) async {
        let bytes = UInt64(mebibytes) << 20
        let piece = 512 << 10
        var block = ByteBufferAllocator().buffer(capacity: piece)
        block.writeBytes((0..<piece).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) })
        let partial = "\(directory)/.nearby-bench-disk.\(getpid()).nearby-part"
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("cannot create \(partial): \(String(cString: strerror(errno)))") }
        let clock = ContinuousClock()
        let cpu0 = processSeconds()
        let start = clock.now
        let writer = FileWriter(descriptor: fd)
        var offset: UInt64 = 0
        while offset < bytes {
            // A piece of its own each time, as the frame splitter hands the writer (the writer
            // gives buffers back to the receive pool, never to us).
            let error = await writer.write(block.getSlice(at: 0, length: piece) ?? block, at: offset)
            guard error == 0 else { fail("write failed: \(String(cString: strerror(error)))") }
            offset += UInt64(piece)
        }
        let (hasher, failure) = await writer.finish()
        guard failure == 0 else { fail("write failed: \(String(cString: strerror(failure)))") }
        _ = hasher.finalize()
        let written = clock.now
        guard fsync(fd) == 0 else { fail("fsync failed: \(String(cString: strerror(errno)))") }
        let synced = clock.now
        close(fd)
        let placed: String
        do {
            placed = try SafePath.placeWithoutOverwriting(partial, in: directory, as: "nearby-bench-disk.bin")
        } catch {
            unlink(partial)
            fail("cannot place the file: \(error)")
        }
        let done = clock.now
        let cpu = processSeconds() - cpu0
        unlink(placed)
        func ms(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        }
        let whole = ms(done - start)
        print(String(
            format: "disk %.0f MB/s: write+sha256 %.0f ms, fsync %.0f ms, place %.1f ms, whole %.0f ms, cpu %.2f s",
            Double(bytes) / whole / 1000, ms(written - start), ms(synced - written), ms(done - synced), whole, cpu))
    }

    /// The process's CPU time (every thread: the writer's queues), in seconds.
    static func processSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
