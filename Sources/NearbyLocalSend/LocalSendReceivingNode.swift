import Foundation
import NearbyControl
import NearbyBase
import NearbyTransfer

/// A LocalSend receiver's whole life: the HTTPS API on 53317 (another port when that is taken,
/// announced and said), discovery announcing that port and answering others, and the policy's
/// decisions. `advertise --localsend` runs it until interrupted; `accept --localsend` until its
/// first transfer ends (`untilFirstTransfer`).
package struct LocalSendReceivingNode: Sendable {
    package let identity: LocalSendIdentity
    package let alias: String
    package let policy: LocalSendPolicy
    package let known: LocalSendKnownDevices
    package let events: any EventSink
    /// The strangers' quota on unfinished files, as nearby's own receiver keeps it, and the places of
    /// strangers' connections: the node's for every protocol it serves (a web page beside it too).
    package let partials = PartialFiles(limits: .from(environment: ProcessInfo.processInfo.environment))
    package let admission = Admission(limits: LocalSendServer.admissionLimits)

    package init(identity: LocalSendIdentity, alias: String, policy: LocalSendPolicy, known: LocalSendKnownDevices, events: any EventSink) {
        self.identity = identity
        self.alias = alias
        self.policy = policy
        self.known = known
        self.events = events
    }

    /// Serves until cancelled, or until the first transfer ends when `untilFirstTransfer`; returns
    /// how that transfer went (nil: whole, or nothing to report).
    /// `control`: where `nearby accept --localsend` from another shell reaches this node (advertise
    /// only); it also holds the lock that keeps a second one of this identity from starting.
    /// `firstTransferWithin`: no transfer answered in that time ends it with that error (`accept --timeout`).
    /// `beside`: work that runs with the node until it stops (`advertise --web`'s page).
    package func run(
        port: Int = LocalSendDefaults.port, untilFirstTransfer: Bool, control: NodeAddress? = nil,
        firstTransferWithin: (Duration, NearbyError)? = nil, beside: (@Sendable () async -> Void)? = nil
    ) async throws(NearbyError) -> NearbyError? {
        let lock = try control.map { address throws(NearbyError) in try NodeLock(address) }
        defer { lock?.release() }
        let server = try await LocalSendServer.bind(identity: identity, port: port, admission: admission)
        if server.moved {
            NearbyLog.logger.warning("TCP port \(port) is taken (another LocalSend app on this machine?): serving LocalSend on port \(server.port) instead, and announcing that port")
        }
        let link = try await MulticastLink.open()
        defer { link.close() }
        let http: LocalSendHTTP
        do { http = try LocalSendHTTP(identity: identity) } catch {
            throw .identityIO(path: known.path, reason: "the LocalSend certificate cannot be used for TLS: \(error)")
        }
        let discovery = LocalSendDiscovery(identity: identity, alias: alias, port: server.port, http: http)
        // A partial an earlier run left (a crash during an upload) is deleted as this starts
        // (`Transfer.unresumable`: the sweep below adopts the save directory first).
        let receiver = LocalSendReceiver(me: discovery.me, policy: policy, events: events, known: known, partials: partials)
        var info = ["fingerprint": identity.fingerprint, "protocol": "https"]
        if let pin = policy.pin, !pin.isEmpty { info["pin"] = "required" }
        events.emit(Events.Advertising(
            peer: PeerRef(id: LocalSendDevice.peerID(fingerprint: identity.fingerprint), name: alias),
            service: "localsend", domain: "local.", port: server.port, info: info))
        return await withTaskGroup(of: NearbyError??.self) { group in
            group.addTask {
                await server.run(receiver)
                return .some(nil)
            }
            group.addTask {
                await discovery.run(link) { _ in true }
                return nil
            }
            group.addTask {
                // A session this node ended early: its sender is told (one at a time, 2 s each at most).
                for await cancel in receiver.cancels { await http.tell(cancel) }
                return nil
            }
            if let beside {
                group.addTask {
                    await beside()
                    return nil
                }
            }
            if let directory = policy.saveDirectory {
                group.addTask {
                    await partials.sweepUntilCancelled(adopting: directory)
                    return nil
                }
            }
            if let control {
                group.addTask {
                    do throws(NearbyError) {
                        try await LocalSendControl.serve(control, receiver: receiver)
                    } catch {
                        NearbyLog.logger.warning("nearby accept cannot reach this node: \(error.errorDescription ?? "\(error)")")
                    }
                    return nil
                }
            }
            if untilFirstTransfer {
                group.addTask {
                    for await outcome in receiver.ended {
                        await server.settled()
                        return .some(outcome)
                    }
                    return nil
                }
            }
            if untilFirstTransfer, let (limit, failure) = firstTransferWithin {
                group.addTask {
                    do { try await Task.sleep(for: limit) } catch { return nil }
                    return await receiver.hasAnswered ? nil : .some(failure)
                }
            }
            var result: NearbyError?
            while let next = await group.next() {
                if case let .some(outcome) = next, untilFirstTransfer {
                    result = outcome
                    break
                }
            }
            group.cancelAll()
            // Sessions still open when the node stops: their senders are told, all at once (2 s at most).
            let open = await receiver.endAll()
            await withTaskGroup(of: Void.self) { tell in
                for cancel in open { tell.addTask { await http.tell(cancel) } }
            }
            return result
        }
    }
}
