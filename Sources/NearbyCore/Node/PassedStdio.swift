import NIOCore
import NIOPosix
import NearbyBase
import NearbyTransfer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stream client's stdin and stdout, passed to the node over its control connection, so the
/// node reads and writes them itself and the bytes no longer cross the control socket twice.
///
/// The exchange, after the request line (whose `PassOffer` says what the client can pass): the
/// node charges the descriptors to its budget, stops NIO reading the connection (NIO would take
/// the byte and drop the descriptors beside it), answers `pass_descriptors`, and takes the one byte
/// and its descriptors with `recvmsg`; then NIO reads on. A node that cannot hold them does not ask,
/// and one that receives fewer than offered closes what came: either way the stream runs over the
/// control connection as before.
struct PassedStdio {
    var input: PassedDescriptor?
    var output: PassedDescriptor?

    /// How long the client has to send its descriptors once asked.
    static let wait: Duration = .seconds(2)

    /// The descriptors `offer` names, or nil (nothing passed: the stream goes over the connection).
    /// Throws when the client was asked and neither sent them nor said it cannot: its next bytes
    /// would be out of step, so the request ends.
    static func receive(
        _ offer: PassOffer?, over channel: any Channel, budget: ResourceBudget = .shared, ask: @Sendable () -> Void
    ) async throws(NearbyError) -> PassedStdio? {
        guard let offer, offer.count > 0, offer.count <= DescriptorPassing.maxDescriptors,
              budget.takeDescriptors(offer.count)
        else { return nil }
        var charged = offer.count
        defer { budget.giveDescriptors(charged) }
        do {
            try await channel.setOption(ChannelOptions.autoRead, value: false).get()
        } catch {
            return nil
        }
        guard let socket = await DescriptorPassing.duplicateSocket(of: channel) else {
            try? await channel.setOption(ChannelOptions.autoRead, value: true).get()
            return nil
        }
        ask()
        let received: Result<[Int32], DescriptorPassing.Failure>
        do {
            received = try await Blocking.run { _ in
                Result { () throws(DescriptorPassing.Failure) in
                    try DescriptorPassing.receive(on: socket, limit: offer.count, until: .now + wait)
                }
            }
        } catch {
            received = .failure(.closed)
        }
        close(socket)
        try? await channel.setOption(ChannelOptions.autoRead, value: true).get()
        let descriptors: [Int32]
        switch received {
        case let .success(fds): descriptors = fds
        case .failure(.timedOut): throw .connectionFailed("the stream's client did not pass its descriptors in time")
        case .failure: throw .cancelled("the stream's client left")
        }
        guard descriptors.count == offer.count else {
            for descriptor in descriptors { close(descriptor) }
            return nil
        }
        // From here each descriptor carries its own charge.
        charged = 0
        let wrapped = descriptors.map { PassedDescriptor($0, budget: budget) }
        return PassedStdio(input: offer.input ? wrapped.first : nil, output: offer.output ? wrapped.last : nil)
    }
}

extension PassedStdio {
    /// What reads the client's stdin in the node: a passed regular file in large blocks, another
    /// passed descriptor as it comes, or the file the client named (`PassedInput`); none of them
    /// when the client sends its input over the connection.
    static func sources(_ input: PassedDescriptor?, named: PassedInput?) -> (PassedInputSource?, PassedStreamSource?) {
        guard let input else {
            return (named.flatMap { PassedInputSource(path: $0.path, device: $0.device, inode: $0.inode, offset: $0.offset) }, nil)
        }
        if let file = PassedInputSource(passed: input) { return (file, nil) }
        return (nil, PassedStreamSource(input))
    }
}

extension DescriptorPassing {
    /// A descriptor of `channel`'s socket of our own (a `dup`), for `sendmsg`/`recvmsg` beside NIO:
    /// NIO may close its own at any time without this one turning into another file. Nil when the
    /// channel has no socket to show (or no descriptor is left).
    static func duplicateSocket(of channel: any Channel) async -> Int32? {
        let duplicate = try? await channel.eventLoop.submit { () -> Int32? in
            try channel.pipeline.syncOperations.withUnsafeTransportIfAvailable(of: NIOBSDSocket.Handle.self) { handle in
                fcntl(handle, F_DUPFD_CLOEXEC, 0)
            }
        }.get()
        guard let duplicate, duplicate >= 0 else { return nil }
        return duplicate
    }
}

extension PassOffer {
    /// What this process can pass a node listening on `socket`, and the descriptors in the offer's
    /// order: its stdin unless `keepInput` (a listener's terminal: no input at all), and its stdout,
    /// each when open and not a terminal (a terminal stays with the command that reads and writes
    /// it), and only to a node of this user (its socket is ours). Nothing with `NEARBY_PASS_FDS=0`.
    package static func standard(
        socket: String, environment: [String: String], keepInput: Bool
    ) -> (offer: PassOffer, descriptors: [Int32])? {
        #if os(Linux) || canImport(Darwin)
        guard environment["NEARBY_PASS_FDS"] != "0" else { return nil }
        var info = stat()
        guard stat(socket, &info) == 0, info.st_uid == getuid() else { return nil }
        func passable(_ fd: Int32) -> Bool {
            var info = stat()
            return fstat(fd, &info) == 0 && isatty(fd) == 0
        }
        let input = !keepInput && passable(STDIN_FILENO)
        let output = passable(STDOUT_FILENO)
        guard input || output else { return nil }
        return (PassOffer(input: input, output: output), (input ? [STDIN_FILENO] : []) + (output ? [STDOUT_FILENO] : []))
        #else
        return nil
        #endif
    }
}

extension PassedInputSource {
    /// Opens the file a client named in its request (`PassedInput`), when it is still that file.
    convenience init?(_ input: PassedInput) {
        self.init(path: input.path, device: input.device, inode: input.inode, offset: input.offset)
    }
}
