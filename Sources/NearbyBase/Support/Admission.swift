import Foundation
import NIOCore

/// Who holds the places for connections that are not sessions yet, as a pure table: at most `total`
/// at once and at most `perAddress` from one IP address. When the table is full, a newcomer from an
/// address that holds fewer places than the heaviest one takes a place of that address — its oldest
/// idle one, else its oldest — which is then evicted, so a few hosts holding connections open
/// (silently, trickling bytes, or inviting and never leaving) cannot keep a real peer out: they can
/// only crowd each other.
struct AdmissionTable: Sendable {
    let total: Int
    let perAddress: Int
    /// Places by address, oldest first (serial numbers grow with time).
    private(set) var byAddress: [String: [UInt64]] = [:]
    /// Places whose connection is in the middle of a request (`Admission.Ticket.working`): evicted
    /// only when their address holds no idle one.
    private(set) var working: Set<UInt64> = []
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
            }), places.count > mine, let oldest = places.first(where: { !working.contains($0) }) ?? places.first else { return .refusedFull }
            evicted = Place(address: heaviest, serial: oldest)
            remove(Place(address: heaviest, serial: oldest))
        }
        next += 1
        byAddress[address, default: []].append(next)
        count += 1
        return .admitted(next, evicting: evicted)
    }

    /// Marks a place as in the middle of a request (or idle again).
    mutating func mark(_ place: Place, working busy: Bool) {
        guard byAddress[place.address]?.contains(place.serial) == true else { return }
        if busy { working.insert(place.serial) } else { working.remove(place.serial) }
    }

    /// Gives a place back; false when it was not held (given back already, or evicted).
    @discardableResult
    mutating func remove(_ place: Place) -> Bool {
        guard var places = byAddress[place.address], let index = places.firstIndex(of: place.serial) else { return false }
        places.remove(at: index)
        byAddress[place.address] = places.isEmpty ? nil : places
        working.remove(place.serial)
        count -= 1
        return true
    }
}

/// The one owner of the connections a node serves before it knows who is on the other end, for
/// every protocol it serves (nearby's links, LocalSend's HTTPS API, a web server): a connection
/// takes a place when it is accepted (`admit`), and gives it back when it becomes someone we know
/// (a session with a pinned or accepted peer, a LocalSend sender with a known fingerprint) or when
/// it closes (`Ticket.release`). While it holds a place it is a stranger's:
///
/// - at most `Limits.perAddress` places from one IP address and `Limits.total` in all; a
///   connection over a cap is closed as soon as it is accepted;
/// - when the table is full, a newcomer from an address that holds fewer places than the heaviest
///   one takes that address's oldest idle place (`AdmissionTable`): whatever one host holds open,
///   any other address is still served;
/// - `Limits.handshake` is how long a stranger may take before its first request (or handshake)
///   is complete, `Limits.idle` how long it may stay silent between requests: the server applies
///   them (`Ticket` carries them), so that a place is never held for free.
///
/// A pinned or known peer is never refused because of strangers: its connection gives its place
/// back the moment it is recognised, and an address the strangers do not crowd is admitted, by
/// eviction if need be.
///
/// Use: in a server's child-channel initializer, `guard let ticket = admission.admit(channel) else
/// { close the channel }`; call `ticket.working(true/false)` around each request, and
/// `ticket.release()` when the peer turns out to be known. The ticket is released when the channel
/// closes, and the channel is closed when the ticket is evicted. In an async server
/// (`NIOAsyncChannel`), close the refused channel and hand a marker on (`LocalSendServer.Admitted`)
/// rather than failing the initializer's future: a failed child initializer is an error on the
/// server channel, and it ends the server's stream of connections.
package final class Admission: Sendable {
    package struct Limits: Sendable, Equatable {
        package var total: Int
        package var perAddress: Int
        /// From accept to the first complete request (or the end of the identity handshake).
        package var handshake: Duration
        /// Silence allowed between requests.
        package var idle: Duration

        package init(total: Int = 128, perAddress: Int = 16, handshake: Duration = .seconds(10), idle: Duration = .seconds(30)) {
            self.total = max(1, total)
            self.perAddress = max(1, perAddress)
            self.handshake = handshake
            self.idle = idle
        }

        /// `self` with `NEARBY_<PREFIX>_TOTAL`, `_PER_ADDRESS`, `_HANDSHAKE_MS` and `_IDLE_MS` from
        /// `environment` (test knobs), e.g. `NEARBY_LOCALSEND_PER_ADDRESS`.
        package func with(environment: [String: String] = ProcessInfo.processInfo.environment, prefix: String) -> Limits {
            var limits = self
            func number(_ name: String) -> Int? { environment["NEARBY_\(prefix)_\(name)"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil } }
            if let total = number("TOTAL") { limits.total = total }
            if let perAddress = number("PER_ADDRESS") { limits.perAddress = perAddress }
            if let handshake = number("HANDSHAKE_MS") { limits.handshake = .milliseconds(handshake) }
            if let idle = number("IDLE_MS") { limits.idle = .milliseconds(idle) }
            return limits
        }
    }

    package static let defaultTotal = 128
    package static let defaultPerAddress = 16

    package let limits: Limits
    private let state: Locked<(table: AdmissionTable, tickets: [UInt64: Ticket])>

    package init(limits: Limits) {
        self.limits = limits
        state = Locked((AdmissionTable(total: limits.total, perAddress: limits.perAddress), [:]))
    }

    package convenience init(total: Int = defaultTotal, perAddress: Int = defaultPerAddress) {
        self.init(limits: Limits(total: total, perAddress: perAddress))
    }

    /// A stranger's place; `release` gives it back (once, whoever calls first). `onEvict` runs when
    /// the owner takes the place for a newcomer.
    package final class Ticket: Sendable {
        private let owner: Admission
        let place: AdmissionTable.Place
        private let evict = Locked<(@Sendable () -> Void)?>(nil)

        init(owner: Admission, place: AdmissionTable.Place) {
            self.owner = owner
            self.place = place
        }

        /// The IP address this place is charged to.
        package var address: String { place.address }
        package var limits: Limits { owner.limits }

        /// What closes the connection holding this place, when the owner needs the place back.
        package func onEvict(_ action: @escaping @Sendable () -> Void) { evict.withLock { $0 = action } }

        /// The connection is in the middle of a request (true) or waiting for the next (false):
        /// an idle place is evicted before a working one.
        package func working(_ busy: Bool) { owner.state.withLock { $0.table.mark(place, working: busy) } }

        /// No longer a stranger's place: the peer is known, or the connection closed.
        package func release() { owner.leave(self) }

        fileprivate func evicted() { evict.withLock { $0 }?() }
    }

    /// A ticket, or nil when the address is at its cap, or the table is full of places held by
    /// addresses that hold no more than this one.
    package func admit(_ address: String) -> Ticket? {
        let (ticket, evicted) = state.withLock { state -> (Ticket?, Ticket?) in
            guard case let .admitted(serial, evicting) = state.table.admit(address) else { return (nil, nil) }
            let ticket = Ticket(owner: self, place: .init(address: address, serial: serial))
            state.tickets[serial] = ticket
            return (ticket, evicting.flatMap { state.tickets.removeValue(forKey: $0.serial) })
        }
        if let evicted {
            NearbyLog.logger.debug("evicting the oldest idle connection from \(evicted.place.address) (it holds the most places) for one from \(address)")
            evicted.evicted()
        }
        return ticket
    }

    /// Admits a channel just accepted (call it from the child-channel initializer): a place in the
    /// process's descriptor `budget` and among the strangers' connections, both given back when it
    /// closes, and the channel closed if its place is evicted. Nil (close the channel) when over a cap.
    package func admit(_ channel: any Channel, budget: ResourceBudget = .shared) -> Ticket? {
        let from = channel.remoteAddress.map(AddressWords.describe) ?? "?"
        guard budget.takeConnection() else {
            NearbyLog.logger.debug("closing a connection from \(from): \(budget.limits.descriptors) connections and files are open, the most this process keeps")
            return nil
        }
        channel.closeFuture.whenComplete { _ in budget.giveConnection() }
        guard let ticket = admit(Self.key(channel.remoteAddress)) else {
            NearbyLog.logger.debug("closing a connection over the caps on strangers' connections from \(from)")
            return nil
        }
        ticket.onEvict { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in ticket.release() }
        return ticket
    }

    /// Places held now.
    package var held: Int { state.withLock { $0.table.count } }

    private func leave(_ ticket: Ticket) {
        state.withLock { state in
            if state.table.remove(ticket.place) { state.tickets[ticket.place.serial] = nil }
        }
    }

    /// The IP address of a peer, without the port (an IPv4 client of a dual-stack listener counts
    /// as its IPv4 address).
    package static func key(_ address: SocketAddress?) -> String {
        guard let ip = address?.ipAddress else { return "unknown" }
        return ip.hasPrefix("::ffff:") && ip.contains(".") ? String(ip.dropFirst(7)) : ip
    }
}
