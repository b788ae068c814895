// `nearby-bench primitives [MiB]`: what the pieces of the data path cost alone on this CPU, in
// CPU-seconds per GiB of one thread (its own clock, so other work on a shared machine does not
// count): SHA-256 as nearby hashes files (swift-crypto, BoringSSL's code on Linux, SHA-NI where the
// CPU has it; SHA-512 beside it), AES-128-GCM sealing and opening of 16 KiB records with the
// BoringSSL that nearby's TLS uses (swift-nio-ssl's, which has a VAES path that swift-crypto's
// older copy lacks on a CPU without AVX-512), and one memory copy of 256 KiB blocks through 32 MiB
// (out of the caches, as a transfer's bytes are). bench/ab.sh adds them to raw TCP's cost to print
// the floor of each row.
import CNIOBoringSSL
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

enum Primitives {
    /// This thread's CPU time, in seconds.
    static func threadSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// CPU-seconds per GiB of `work`, run over `bytes` in calls of `block` bytes each.
    static func perGiB(bytes: Int, block: Int, _ work: () -> Void) -> Double {
        let calls = max(1, bytes / block)
        let start = threadSeconds()
        for _ in 0..<calls { work() }
        return (threadSeconds() - start) / Double(calls * block) * Double(1 << 30)
    }

    static func run(mebibytes: Int) {
        let bytes = mebibytes << 20
        let block = 512 << 10
        let record = 16 << 10
        var source = [UInt8](repeating: 0, count: block)
        for i in source.indices { source[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }

        var hasher = SHA256()
        let sha = perGiB(bytes: bytes, block: block) { source.withUnsafeBytes { hasher.update(bufferPointer: $0) } }
        let digest = hasher.finalize()
        // The other hashes swift-crypto has, for comparison (SHA-NI covers SHA-256 only).
        var longer = SHA512()
        let sha512 = perGiB(bytes: bytes, block: block) { source.withUnsafeBytes { longer.update(bufferPointer: $0) } }
        _ = longer.finalize()

        let (seal, open) = aesGCM(bytes: bytes, record: record)

        // A ring of 32 MiB, each copy to and from the next place in it: memory, not the caches.
        let ring = 32 << 20
        var from = [UInt8](repeating: 1, count: ring)
        var to = [UInt8](repeating: 0, count: ring)
        var at = 0
        let copy = perGiB(bytes: bytes, block: block / 2) {
            to.withUnsafeMutableBytes { to in
                from.withUnsafeBytes { from in
                    UnsafeMutableRawBufferPointer(rebasing: to[at..<(at + block / 2)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: from[at..<(at + block / 2)]))
                }
            }
            at = (at + block / 2) % ring
        }
        from[0] &+= to[1]
        func line(_ name: String, _ seconds: Double) {
            print(name, String(format: "%.3f %.0f", seconds, Double(1 << 30) / seconds / 1e6))
        }
        print("# CPU-s/GiB MB/s (one thread, \(mebibytes) MiB; sha256 \(digest.description.suffix(8)))")
        line("sha256", sha)
        line("sha512", sha512)
        line("aes128gcm-seal", seal)
        line("aes128gcm-open", open)
        line("memcpy", copy)
    }

    /// CPU-seconds per GiB of sealing, and of opening, `record`-byte records with AES-128-GCM (one
    /// context, as a TLS connection keeps, and a nonce of the benchmark's own: never for real data).
    static func aesGCM(bytes: Int, record: Int) -> (seal: Double, open: Double) {
        let key = [UInt8](repeating: 7, count: 16)
        let nonce = [UInt8](repeating: 1, count: 12)
        let plain = [UInt8](repeating: 3, count: record)
        var sealed = [UInt8](repeating: 0, count: record + 16)
        var opened = [UInt8](repeating: 0, count: record)
        guard let context = EVP_AEAD_CTX_new(EVP_aead_aes_128_gcm(), key, 16, 16) else {
            fail("no AES-128-GCM context")
        }
        defer { EVP_AEAD_CTX_free(context) }
        var length = 0
        let seal = perGiB(bytes: bytes, block: record) {
            _ = sealed.withUnsafeMutableBufferPointer { out in
                EVP_AEAD_CTX_seal(context, out.baseAddress, &length, out.count, nonce, 12, plain, record, nil, 0)
            }
        }
        var ok: Int32 = 1
        let open = perGiB(bytes: bytes, block: record) {
            var got = 0
            ok &= opened.withUnsafeMutableBufferPointer { out in
                EVP_AEAD_CTX_open(context, out.baseAddress, &got, out.count, nonce, 12, sealed, length, nil, 0)
            }
        }
        guard ok == 1, opened == plain else { fail("AES-GCM did not open what it sealed") }
        return (seal, open)
    }
}
