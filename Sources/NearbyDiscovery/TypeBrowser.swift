import CDNSSD
import Dispatch
import NearbyBase


/// How many instances each type has. The daemon reports an instance once per interface and IP
/// family and withdraws each of those separately, so an instance counts while any report stands.
struct TypeCounter: Sendable, Equatable {
    private var reports: [String: [String: Int]] = [:]

    package init() {}

    /// Applies one add or remove of `instance` of `type`; returns the type's new count when it changed.
    package mutating func apply(type: String, instance: String, added: Bool) -> Int? {
        let before = count(type)
        var instances = reports[type, default: [:]]
        let next = (instances[instance] ?? 0) + (added ? 1 : -1)
        instances[instance] = next > 0 ? next : nil
        reports[type] = instances
        let after = count(type)
        return after == before ? nil : after
    }

    package func count(_ type: String) -> Int { reports[type]?.count ?? 0 }
}

/// Browses the meta-query and, per type found, that type's instances; yields a type with its count
/// whenever the count changes (0: the type is gone). Confined to one serial queue, as `Browser` is.
package final class TypeBrowser: @unchecked Sendable {
    package enum Update: Sendable, Equatable {
        case type(String, instances: Int)
        case failed(NearbyError)
    }

    /// At most this many types are followed: the answers come from the network.
    package static let maxTypes = 256
    private let queue = DispatchQueue(label: "nearby.types")
    private var meta: DNSServiceOperation?
    private var perType: [String: DNSServiceOperation] = [:]
    private var typeReports: [String: Int] = [:]
    private var counter = TypeCounter()
    private var continuation: AsyncStream<Update>.Continuation?
    private var stopped = false

    package init() {}

    /// Starts browsing for types; waits for the daemon on the queue, as `Browser.start()` does.
    package func start() async throws(NearbyError) -> AsyncStream<Update> {
        DNSSD.silenceAvahiWarnings()
        let (stream, continuation) = AsyncStream<Update>.makeStream()
        continuation.onTermination = { [weak self] _ in self?.stop() }
        let started: Result<Void, NearbyError>? = await queue.outcome { [self] in
            guard !stopped else { return .failure(.cancelled("browsing for service types")) }
            self.continuation = continuation
            return Result { () throws(NearbyError) in
                meta = try DNSSD.browseTypes(queue: queue, onFailure: { [weak self] status in self?.fail(status) }) {
                    [weak self] added, _, status, name, type in
                    guard let self else { return }
                    guard status == Int32(kDNSServiceErr_NoError) else { return fail(status) }
                    guard let name, let type, let full = DNSSDType.fromMetaAnswer(name: name, type: type) else { return }
                    typeChanged(full, added: added)
                }
            }
        }
        guard let started else {
            stop()
            throw .cancelled("browsing for service types")
        }
        try started.get()
        return stream
    }

    package func stop() {
        queue.async { [self] in
            guard !stopped else { return }
            stopped = true
            meta?.cancel()
            perType.values.forEach { $0.cancel() }
            perType = [:]
            continuation?.finish()
        }
    }

    private func typeChanged(_ type: String, added: Bool) {
        guard !stopped else { return }
        let reports = (typeReports[type] ?? 0) + (added ? 1 : -1)
        typeReports[type] = reports > 0 ? reports : nil
        if reports > 0, perType[type] == nil, perType.count < Self.maxTypes {
            perType[type] = try? DNSSD.browse(type: type, domain: nil, queue: queue, onFailure: { _ in }) {
                [weak self] added, _, status, name in
                guard let self, !stopped, status == Int32(kDNSServiceErr_NoError), let name else { return }
                if let count = counter.apply(type: type, instance: name, added: added) {
                    continuation?.yield(.type(type, instances: count))
                }
            }
        } else if reports <= 0, let operation = perType.removeValue(forKey: type) {
            operation.cancel()
            counter = counter.removingType(type)
            continuation?.yield(.type(type, instances: 0))
        }
    }

    private func fail(_ status: Int32) {
        guard !stopped else { return }
        continuation?.yield(.failed(DNSServiceOperation.failure(status, "browse")))
        stop()
    }
}

extension TypeCounter {
    /// Forgets a type whose own browse was stopped.
    func removingType(_ type: String) -> TypeCounter {
        var copy = self
        copy.reports[type] = nil
        return copy
    }
}
