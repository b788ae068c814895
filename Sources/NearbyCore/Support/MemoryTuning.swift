#if canImport(Glibc)
import Glibc
#endif

/// How the process's allocator treats the buffers of a transfer (Linux, glibc).
public enum MemoryTuning {
    /// Keeps freed transfer buffers (256 KiB to 1 MiB) for the next ones instead of handing them
    /// back to the kernel. By default glibc maps every block over 128 KiB on its own and unmaps it
    /// when freed, and trims the heap past 128 KiB free: a bulk transfer then faults in and zeroes
    /// fresh pages for every chunk (on a virtual machine that returns freed memory to its host, a
    /// page touched again costs far more). The peak stays what it was; up to `trim` bytes of a
    /// heap's free top stay mapped after a transfer.
    public static func keepTransferBuffers(mmap: Int32 = 4 << 20, trim: Int32 = 32 << 20) {
        #if canImport(Glibc)
        // <malloc.h> is not part of the Glibc module: mallopt is looked up (absent from other C
        // libraries, where this does nothing). Its parameters are glibc's stable ABI.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let trimThreshold: Int32 = -1, mmapThreshold: Int32 = -3
        _ = mallopt(mmapThreshold, mmap)
        _ = mallopt(trimThreshold, trim)
        #endif
    }
}
