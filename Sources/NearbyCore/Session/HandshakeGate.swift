import NIOCore
import Synchronization

/// Caps on connections that have not finished the handshake (preamble, TLS, hello and auth): at most
/// `total` at once, and at most `perAddress` from one IP address, so one host flooding the port
/// (or holding connections open silently) cannot use up the node's file descriptors or keep real
/// peers out: a connection over a cap is closed as soon as it is accepted. A connection leaves the
/// count when its handshake ends, or when it closes.
public final class HandshakeGate: Sendable {
    public static let defaultTotal = 128
    public static let defaultPerAddress = 16

    let total: Int
    let perAddress: Int
    private let counts = Mutex<(all: Int, by: [String: Int])>((0, [:]))

    public init(total: Int = defaultTotal, perAddress: Int = defaultPerAddress) {
        self.total = total
        self.perAddress = perAddress
    }

    /// A place in the handshake; `release` gives it back (once, whoever calls first).
    public final class Ticket: Sendable {
        private let gate: HandshakeGate
        let address: String
        private let released = Mutex(false)
        init(gate: HandshakeGate, address: String) {
            self.gate = gate
            self.address = address
        }
        public func release() {
            guard released.withLock({ was in defer { was = true }; return !was }) else { return }
            gate.leave(address)
        }
    }

    /// A ticket, or nil when the address or the node is at its cap.
    public func admit(_ address: String) -> Ticket? {
        let admitted = counts.withLock { counts -> Bool in
            guard counts.all < total, counts.by[address, default: 0] < perAddress else { return false }
            counts.all += 1
            counts.by[address, default: 0] += 1
            return true
        }
        return admitted ? Ticket(gate: self, address: address) : nil
    }

    var inHandshake: Int { counts.withLock { $0.all } }

    private func leave(_ address: String) {
        counts.withLock { counts in
            counts.all -= 1
            let left = counts.by[address, default: 1] - 1
            counts.by[address] = left > 0 ? left : nil
        }
    }

    /// The IP address of a peer, without the port (an IPv4 client of a dual-stack listener counts
    /// as its IPv4 address).
    static func key(_ address: SocketAddress?) -> String {
        guard let ip = address?.ipAddress else { return "unknown" }
        return ip.hasPrefix("::ffff:") && ip.contains(".") ? String(ip.dropFirst(7)) : ip
    }
}
