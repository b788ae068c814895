#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Open descriptors handed from one process to another over a connected Unix stream socket
/// (`SCM_RIGHTS`): one byte with the descriptors beside it, as one `sendmsg`, taken with one
/// `recvmsg`. NIO has no API for ancillary data on stream channels, so this works on the socket's
/// descriptor directly (a `dup` of it), while NIO does not read it (the caller pauses its
/// reads first). The receiver gets new descriptors for the same open files: what the sender does
/// with its own copies no longer matters to them.
package enum DescriptorPassing {
    /// Descriptors per message, at most: a stream passes two (stdin, stdout).
    package static let maxDescriptors = 4

    package enum Failure: Error, Equatable, Sendable {
        /// A system call failed (errno).
        case system(Int32)
        /// Nothing came before the deadline.
        case timedOut
        /// The other side closed the connection first.
        case closed
    }

    /// Sends one byte and `descriptors` (none is allowed: "I send nothing") on `socket`, waiting
    /// for room until `deadline` when the socket is non-blocking and full.
    package static func send(
        _ descriptors: [Int32], on socket: Int32, until deadline: ContinuousClock.Instant = .now + .seconds(2)
    ) throws(Failure) {
        precondition(descriptors.count <= maxDescriptors)
        var byte: UInt8 = 1
        let space = controlSpace(descriptors.count)
        var control = [UInt8](repeating: 0, count: max(space, 1))
        let sent: Int = withMessage(carrying: &byte, control: &control) { message, controlBytes in
            if !descriptors.isEmpty, let base = controlBytes.baseAddress {
                let header = base.assumingMemoryBound(to: cmsghdr.self)
                header.pointee.cmsg_len = numericCast(controlLength(descriptors.count))
                header.pointee.cmsg_level = SOL_SOCKET
                header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                let data = base + headerSpace
                for (index, descriptor) in descriptors.enumerated() {
                    data.storeBytes(of: descriptor, toByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self)
                }
                message.msg_control = base
                message.msg_controllen = numericCast(space)
            }
            while true {
                let n = sendmsg(socket, &message, noSignal)
                if n >= 0 { return n }
                let code = errno
                if code == EINTR { continue }
                guard code == EAGAIN || code == EWOULDBLOCK else { return -Int(code) }
                guard wait(socket, for: Int16(POLLOUT), until: deadline) else { return -Int(ETIMEDOUT) }
            }
        }
        if sent == -Int(ETIMEDOUT) { throw .timedOut }
        if sent < 0 { throw .system(Int32(-sent)) }
    }

    /// Receives the one byte and the descriptors that came with it, waiting until `deadline`. At
    /// most `limit` are kept; any beyond, and all of a message the kernel cut short, are closed
    /// here, so a confused or hostile sender cannot leave descriptors in this process. The ones
    /// returned are close-on-exec.
    package static func receive(
        on socket: Int32, limit: Int, until deadline: ContinuousClock.Instant = .now + .seconds(2)
    ) throws(Failure) -> [Int32] {
        var byte: UInt8 = 0
        let space = controlSpace(maxDescriptors)
        var control = [UInt8](repeating: 0, count: space)
        var received: [Int32] = []
        var truncated = false
        let result: Int = withMessage(carrying: &byte, control: &control) { message, controlBytes in
            message.msg_control = controlBytes.baseAddress
            message.msg_controllen = numericCast(space)
            var n: Int
            while true {
                n = recvmsg(socket, &message, closeOnExec | Int32(MSG_DONTWAIT))
                if n >= 0 { break }
                let code = errno
                if code == EINTR { continue }
                guard code == EAGAIN || code == EWOULDBLOCK else { return -Int(code) }
                guard wait(socket, for: Int16(POLLIN), until: deadline) else { return -Int(ETIMEDOUT) }
            }
            truncated = message.msg_flags & Int32(MSG_CTRUNC) != 0
            received = descriptors(in: message, control: controlBytes)
            return n
        }
        if result == -Int(ETIMEDOUT) { throw .timedOut }
        if result < 0 { throw .system(Int32(-result)) }
        #if !os(Linux)
        for descriptor in received { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        #endif
        if result == 0 || truncated || received.count > limit {
            for descriptor in received { close(descriptor) }
            if result == 0 { throw .closed }
            return []
        }
        return received
    }

    /// Runs `body` with a message whose one data byte is `byte` and whose control space is `control`.
    private static func withMessage<Result>(
        carrying byte: inout UInt8, control: inout [UInt8], _ body: (inout msghdr, UnsafeMutableRawBufferPointer) -> Result
    ) -> Result {
        withUnsafeMutablePointer(to: &byte) { bytePointer in
            var vector = iovec(iov_base: UnsafeMutableRawPointer(bytePointer), iov_len: 1)
            return control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    return body(&message, controlBytes)
                }
            }
        }
    }

    // MARK: The control message's layout (CMSG_SPACE and friends are C macros Swift cannot see)

    #if os(Linux)
    private static let alignment = MemoryLayout<Int>.size
    private static let noSignal = Int32(MSG_NOSIGNAL)
    private static let closeOnExec = Int32(MSG_CMSG_CLOEXEC)
    #else
    private static let alignment = MemoryLayout<UInt32>.size
    private static let noSignal: Int32 = 0
    private static let closeOnExec: Int32 = 0
    #endif

    private static func aligned(_ length: Int) -> Int { (length + alignment - 1) & ~(alignment - 1) }
    private static var headerSpace: Int { aligned(MemoryLayout<cmsghdr>.size) }
    static func controlLength(_ count: Int) -> Int { headerSpace + count * MemoryLayout<Int32>.size }
    static func controlSpace(_ count: Int) -> Int { headerSpace + aligned(count * MemoryLayout<Int32>.size) }

    /// The descriptors of every `SCM_RIGHTS` message in `message`'s control data.
    private static func descriptors(in message: msghdr, control: UnsafeMutableRawBufferPointer) -> [Int32] {
        guard let base = control.baseAddress else { return [] }
        let total = min(Int(message.msg_controllen), control.count)
        var found: [Int32] = []
        var offset = 0
        while offset + headerSpace <= total {
            let header = (base + offset).load(as: cmsghdr.self)
            let length = Int(header.cmsg_len)
            guard length >= headerSpace, offset + length <= total else { break }
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                let count = (length - headerSpace) / MemoryLayout<Int32>.size
                for index in 0..<count {
                    found.append((base + offset + headerSpace).loadUnaligned(fromByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self))
                }
            }
            offset += aligned(length)
        }
        return found
    }

    /// Waits until `socket` is ready for `events` (or hung up); false at the deadline.
    private static func wait(_ socket: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var ready = pollfd(fd: socket, events: events, revents: 0)
            let n = poll(&ready, 1, milliseconds)
            if n > 0 { return true }
            if n < 0, errno != EINTR { return true }
        }
    }
}
