import NIOCore
import Synchronization

/// Who holds the places for connections that are not sessions yet, as a pure table: at most `total`
/// at once and at most `perAddress` from one IP address. When the table is full, a newcomer from an
/// address that holds fewer places than the heaviest one takes the oldest place of that address
/// (which is then evicted), so a few hosts holding connections open (silently, trickling bytes, or
/// inviting and never leaving) cannot keep a real peer out: they can only crowd each other.
struct AdmissionTable: Sendable {
    let total: Int
    let perAddress: Int
    /// Places by address, oldest first (serial numbers grow with time).
    private(set) var byAddress: [String: [UInt64]] = [:]
    private(set) var count = 0
    private var next: UInt64 = 0

    enum Decision: Equatable, Sendable {
        /// Admitted with this serial; `evicting` must be closed to make room.
        case admitted(UInt64, evicting: Place?)
        case refusedAddress
        case refusedFull
    }

    struct Place: Equatable, Hashable, Sendable {
        let address: String
        let serial: UInt64
    }

    init(total: Int, perAddress: Int) {
        self.total = max(1, total)
        self.perAddress = max(1, perAddress)
    }

    mutating func admit(_ address: String) -> Decision {
        let mine = byAddress[address]?.count ?? 0
        guard mine < perAddress else { return .refusedAddress }
        var evicted: Place?
        if count >= total {
            // The heaviest address; among equals, the one whose oldest place is oldest.
            guard let (heaviest, places) = byAddress.max(by: { a, b in
                a.value.count != b.value.count ? a.value.count < b.value.count : (a.value.first ?? 0) > (b.value.first ?? 0)
            }), places.count > mine, let oldest = places.first else { return .refusedFull }
            evicted = Place(address: heaviest, serial: oldest)
            remove(Place(address: heaviest, serial: oldest))
        }
        next += 1
        byAddress[address, default: []].append(next)
        count += 1
        return .admitted(next, evicting: evicted)
    }

    /// Gives a place back; false when it was not held (given back already, or evicted).
    @discardableResult
    mutating func remove(_ place: Place) -> Bool {
        guard var places = byAddress[place.address], let index = places.firstIndex(of: place.serial) else { return false }
        places.remove(at: index)
        byAddress[place.address] = places.isEmpty ? nil : places
        count -= 1
        return true
    }
}

/// Caps on connections a stranger can open that are not sessions yet: from accept, through the
/// preamble, TLS and the identity handshake, to an invitation answered (or a doctor probe). A place
/// is given back when the link becomes a session, or when it closes; a link evicted to make room
/// (see `AdmissionTable`) is closed. Connections over a cap are closed as soon as they are accepted.
public final class HandshakeGate: Sendable {
    public static let defaultTotal = 128
    public static let defaultPerAddress = 16

    private let state: Mutex<(table: AdmissionTable, tickets: [UInt64: Ticket])>

    public init(total: Int = defaultTotal, perAddress: Int = defaultPerAddress) {
        state = Mutex((AdmissionTable(total: total, perAddress: perAddress), [:]))
    }

    /// A place among the links that are not sessions; `release` gives it back (once, whoever calls
    /// first). `onEvict` runs when the gate takes the place for a newcomer.
    public final class Ticket: Sendable {
        private let gate: HandshakeGate
        let place: AdmissionTable.Place
        private let evict = Mutex<(@Sendable () -> Void)?>(nil)

        init(gate: HandshakeGate, place: AdmissionTable.Place) {
            self.gate = gate
            self.place = place
        }

        /// What closes the connection holding this place, when the gate needs the place back.
        func onEvict(_ action: @escaping @Sendable () -> Void) { evict.withLock { $0 = action } }

        public func release() { gate.leave(self) }

        fileprivate func evicted() { evict.withLock { $0 }?() }
    }

    /// A ticket, or nil when the address is at its cap, or the gate is full of places held by
    /// addresses that hold no more than this one.
    public func admit(_ address: String) -> Ticket? {
        let (ticket, evicted) = state.withLock { state -> (Ticket?, Ticket?) in
            guard case let .admitted(serial, evicting) = state.table.admit(address) else { return (nil, nil) }
            let ticket = Ticket(gate: self, place: .init(address: address, serial: serial))
            state.tickets[serial] = ticket
            return (ticket, evicting.flatMap { state.tickets.removeValue(forKey: $0.serial) })
        }
        if let evicted {
            NearbyLog.logger.debug("evicting the oldest connection from \(evicted.place.address) (it holds the most places) for one from \(address)")
            evicted.evicted()
        }
        return ticket
    }

    var held: Int { state.withLock { $0.table.count } }

    private func leave(_ ticket: Ticket) {
        state.withLock { state in
            if state.table.remove(ticket.place) { state.tickets[ticket.place.serial] = nil }
        }
    }

    /// The IP address of a peer, without the port (an IPv4 client of a dual-stack listener counts
    /// as its IPv4 address).
    static func key(_ address: SocketAddress?) -> String {
        guard let ip = address?.ipAddress else { return "unknown" }
        return ip.hasPrefix("::ffff:") && ip.contains(".") ? String(ip.dropFirst(7)) : ip
    }
}
