import CDNSSD
import Dispatch
import NearbyBase

/// Publishes this node: `_<service>._tcp`, instance name = peer ID, the MPC-compatible TXT record.
/// Stopping it deallocates the registration, so avahi-daemon sends goodbye packets and browsers see
/// the peer lost at once.
package final class Advertiser: @unchecked Sendable {
    package let service: ServiceType
    package let instance: String
    package let port: UInt16
    package let txt: TXTRecord
    private let queue = DispatchQueue(label: "nearby.advertiser")
    private var operation: DNSServiceOperation?
    /// Set once the daemon confirmed: anything heard from it after that means it went away.
    private var confirmed = false
    private var onLost: (@Sendable () -> Void)?

    package init(service: ServiceType, instance: String, port: UInt16, txt: TXTRecord) {
        self.service = service
        self.instance = instance
        self.port = port
        self.txt = txt
    }

    /// The name the daemon registered: `instance`, or the daemon's alternative (`ID #2`) when
    /// another host already uses it — a squatter must not keep the node down, and peers know us by
    /// the identity the handshake proves, never by the instance name (`DiscoveredPeer.claimedID`).
    /// (Not kept on the queue: a call on it may be waiting for a hung daemon.)
    package var registeredName: String { registered.withLock { $0 } ?? instance }
    private let registered = Locked<String?>(nil)

    /// Registers and waits until the daemon confirms. A registration renamed because of a conflict
    /// is kept under the daemon's alternative name (`registeredName`). Once
    /// confirmed, `lost` is called (once) if the daemon goes away: Avahi's compat layer says so with
    /// an error on the connection or with a second callback, and the registration is gone with it.
    package func start(lost: (@Sendable () -> Void)? = nil) async throws(NearbyError) {
        DNSSD.silenceAvahiWarnings()
        let wire = try txt.encode()
        let once = OneShot<Result<Void, NearbyError>>()
        queue.async { [self] in
            confirmed = false
            onLost = lost
            do throws(NearbyError) {
                operation = try DNSSD.register(
                    name: instance, type: service.registrationType, port: port, txt: wire, queue: queue,
                    onFailure: { [self] status in
                        if confirmed { daemonWentAway() } else { once.settle(.failure(.daemonUnavailable(code: status))) }
                    }
                ) { [self, instance] status, name in
                    if confirmed {
                        daemonWentAway()
                    } else if status != Int32(kDNSServiceErr_NoError) {
                        once.settle(.failure(DNSServiceOperation.failure(status, "register")))
                    } else {
                        if let name, name != instance {
                            NearbyLog.logger.warning("another host uses the name \(instance) on the network: advertising as '\(name)'")
                        }
                        registered.withLock { $0 = name }
                        confirmed = true
                        once.settle(.success(()))
                    }
                }
            } catch {
                once.settle(.failure(error))
            }
        }
        // Cancelled while waiting: withdraw whatever the daemon may still confirm.
        let result = await once.wait() ?? .failure(.cancelled("registering with the DNS-SD daemon"))
        if case let .failure(error) = result {
            await stop()
            throw error
        }
    }

    /// On the queue: the daemon dropped us. Forget the registration and say so, once.
    private func daemonWentAway() {
        confirmed = false
        operation?.cancel()
        operation = nil
        let lost = onLost
        onLost = nil
        lost?()
    }

    /// Withdraws the registration. Returns once the daemon has been told (at most 2 s), without
    /// blocking a thread while it waits — nor while a call to a hung daemon holds the queue.
    package func stop() async {
        let deadline = ContinuousClock.now + .seconds(2)
        guard let operation = await queue.outcome(until: deadline, of: { [self] in cancelled() }) ?? nil else { return }
        await operation.released(within: deadline - .now)
    }

    /// Withdraws the registration and returns at once; the daemon is told on the advertiser's
    /// queue (or, if the process ends first, by the daemon itself when our connection closes).
    package func withdraw() { queue.async { [self] in _ = cancelled() } }

    /// On the queue.
    private func cancelled() -> DNSServiceOperation? {
        onLost = nil
        confirmed = false
        defer { operation = nil }
        operation?.cancel()
        return operation
    }
}
