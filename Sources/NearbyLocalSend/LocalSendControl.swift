import Foundation
import NIOCore
import NIOPosix
import NearbyControl
import NearbyBase
import NearbyIdentity

/// How `nearby accept [--decline] --localsend` answers a running `advertise --localsend`: one JSON
/// line over a Unix socket in the run directory (this user's only: 0700 directory, 0077 umask),
/// `{"accept":true,"query":"…"}`, answered by one line, the `accepted` / `declined` event (or an
/// `error` event). At most `ControlSocket.maxClients` clients at once, 4 KiB a request.
package enum LocalSendControl {
    struct Request: Codable {
        var accept: Bool
        var query: String?
    }

    static let maxRequest = 4096

    /// The socket of the LocalSend node of this identity.
    package static func address(paths: NearbyPaths, environment: [String: String], peerID: PeerID) -> NodeAddress {
        NodeAddress(paths: paths, environment: environment, peerID: peerID, service: .localSendControl)
    }

    /// Serves answers until cancelled, on the one control socket every kind of node has.
    package static func serve(_ address: NodeAddress, receiver: LocalSendReceiver) async throws(NearbyError) {
        let tokens = Locked(0)
        try await ControlSocket.serve(address) { client in
            let token = tokens.withLock { value -> Int in
                value += 1
                return value
            }
            await answer(client, receiver: receiver, token: token)
        }
    }

    static func answer(_ client: ControlConnection, receiver: LocalSendReceiver, token: Int) async {
        try? await client.channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var bytes: [UInt8] = []
            while !bytes.contains(UInt8(ascii: "\n")), bytes.count <= maxRequest, var chunk = try await iterator.next() {
                bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
            }
            guard bytes.count <= maxRequest, let end = bytes.firstIndex(of: UInt8(ascii: "\n")),
                  let request = try? JSONDecoder().decode(Request.self, from: Data(bytes[..<end]))
            else { return }
            let reply = await withDiscardingTaskGroup { group in
                // The client gone (Ctrl-C) stops waiting: it must not answer a transfer after it left.
                group.addTask {
                    if await client.gone.wait() != nil { receiver.forget(token) }
                }
                defer { group.cancelAll() }
                return await receiver.answer(query: request.query, accept: request.accept, token: token)
            }
            let line: String = switch reply {
            case let .line(line): line
            case let .failure(error): EventEncoder().line(Events.Failure(error))
            }
            try await outbound.write(ByteBuffer(string: line + "\n"))
        }
    }

    /// Asks the running LocalSend node; nil when none runs (no socket, or nobody listening on it).
    package static func ask(_ address: NodeAddress, query: String?, accept: Bool) async throws(NearbyError) -> String? {
        guard FileManager.default.fileExists(atPath: address.socket) else { return nil }
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: address.socket) { channel in
                    channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
                }
        } catch {
            return nil
        }
        let body = (try? JSONEncoder().encode(Request(accept: accept, query: query))).map { Array($0) + [UInt8(ascii: "\n")] } ?? []
        do {
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(bytes: body))
                var bytes: [UInt8] = []
                for try await var chunk in inbound {
                    bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
                    guard bytes.count <= 256 * 1024 else { break }
                    if let end = bytes.firstIndex(of: UInt8(ascii: "\n")) { return String(decoding: bytes[..<end], as: UTF8.self) }
                }
                throw NearbyError.connectionFailed("the LocalSend node closed the control socket without an answer")
            }
        } catch let error as NearbyError {
            throw error
        } catch {
            throw .connectionFailed("the LocalSend node's control socket: \(ErrorWords.describe(error))")
        }
    }
}

extension ServiceType {
    /// Names the LocalSend node's lock and socket in the run directory (never advertised).
    static var localSendControl: ServiceType {
        (try? ServiceType(option: "localsend")) ?? .default
    }
}
