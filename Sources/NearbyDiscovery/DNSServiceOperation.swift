import CDNSSD
import Dispatch
import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `DNSServiceRef` wrapper that may cross queues; it is only ever used on its owner's serial queue.
struct ServiceRef: @unchecked Sendable {
    let raw: DNSServiceRef
}

/// One running DNS-SD operation: its `DNSServiceRef` is driven by a dispatch source on the ref's
/// socket and deallocated in the source's cancel handler (the way that works with Avahi's compat
/// layer on Linux, which has no `DNSServiceSetDispatchQueue`). Confined to the owner's serial queue.
final class DNSServiceOperation: @unchecked Sendable {
    private let source: DispatchSourceRead
    private var cancelled = false
    /// Settled when the ref has been deallocated (the daemon has been told), for `released()`.
    private let deallocated = OneShot<Void>()

    /// `retaining` is kept alive until the ref is deallocated: the callback box the C side points at.
    init(ref: ServiceRef, queue: DispatchQueue, retaining box: AnyObject, onFailure: @escaping @Sendable (Int32) -> Void) {
        source = DispatchSource.makeReadSource(fileDescriptor: DNSServiceRefSockFD(ref.raw), queue: queue)
        source.setEventHandler { [source] in
            let status = DNSServiceProcessResult(ref.raw)
            if status != Int32(kDNSServiceErr_NoError) {
                source.cancel()
                onFailure(status)
            }
        }
        source.setCancelHandler { [deallocated] in
            DNSServiceRefDeallocate(ref.raw)
            withExtendedLifetime(box) {}
            deallocated.settle(())
        }
        source.resume()
    }

    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        source.cancel()
    }

    /// Returns once the cancel handler has run (the daemon has been told), after `limit` at the
    /// latest, or when the waiting task is cancelled. Blocks no thread.
    func released(within limit: Duration = .seconds(2)) async {
        _ = await deallocated.wait(until: .now + limit)
    }

    /// The error a running operation ends with: a zero status (Avahi's way of saying the daemon
    /// went away) counts as the daemon being unavailable.
    static func failure(_ status: Int32, _ operation: String) -> NearbyError {
        do {
            // Mid-operation the daemon went away (it may be back already): not asked of the bus.
            try check(status == 0 ? Int32(kDNSServiceErr_Unknown) : status, operation, askingTheBus: false)
            return .daemonUnavailable(code: status)
        } catch {
            return error
        }
    }

    /// Turns the status of a DNSService* call into our error, naming the operation.
    static func check(_ status: DNSServiceErrorType, _ operation: String, askingTheBus: Bool = true) throws(NearbyError) {
        switch status {
        case Int32(kDNSServiceErr_NoError): return
        // -65537 is what Avahi's compat layer returns when it cannot reach avahi-daemon (or D-Bus);
        // -65563 is Apple's "service not running".
        // -65553 (Refused) is Avahi's access denied: D-Bus policy does not let this user talk to it.
        // -65537 also when the policy denies every call: the bus tells which (DaemonAccess).
        case Int32(kDNSServiceErr_Unknown), -65563, Int32(kDNSServiceErr_Refused):
            throw askingTheBus ? DaemonAccess.unavailable(status) : .daemonUnavailable(code: status)
        default: throw .discoveryFailed(operation: operation, code: status)
        }
    }
}

extension DispatchQueue {
    /// Runs `work` on this queue and waits for its result without holding a thread of the
    /// cooperative pool: Avahi's compat layer talks to the daemon over D-Bus inside the DNSService*
    /// calls and blocks until it answers (25 s for a daemon that is stopped or hung). Nil when the
    /// waiting task is cancelled first, or `deadline` passes; `work` still runs, and whatever it
    /// starts is the owner's to stop (a `stop()` queued behind it).
    func outcome<T: Sendable>(until deadline: ContinuousClock.Instant? = nil, of work: @escaping @Sendable () -> T) async -> T? {
        let done = OneShot<T>()
        self.async { done.settle(work()) }
        guard let deadline else { return await done.wait() }
        return await done.wait(until: deadline)
    }
}

/// Holds the Swift closure a C callback's context points at.
final class CallbackBox<Handler>: @unchecked Sendable {
    let handler: Handler
    init(_ handler: Handler) { self.handler = handler }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ context: UnsafeMutableRawPointer?) -> Handler? {
        guard let context else { return nil }
        return Unmanaged<CallbackBox<Handler>>.fromOpaque(context).takeUnretainedValue().handler
    }
}

/// The four DNS-SD calls nearby uses, each returning a running operation.
enum DNSSD {
    typealias BrowseHandler = (_ added: Bool, _ interface: UInt32, _ status: Int32, _ name: String?) -> Void
    typealias ResolveHandler = (_ interface: UInt32, _ status: Int32, _ host: String?, _ port: UInt16, _ txt: [UInt8]) -> Void
    typealias RecordHandler = (_ added: Bool, _ interface: UInt32, _ status: Int32, _ type: UInt16, _ rdata: [UInt8]) -> Void
    typealias RegisterHandler = (_ status: Int32, _ name: String?) -> Void

    static let addFlag = DNSServiceFlags(kDNSServiceFlagsAdd)

    static func browse(
        type: String, domain: String?, queue: DispatchQueue,
        onFailure: @escaping @Sendable (Int32) -> Void, handler: @escaping BrowseHandler
    ) throws(NearbyError) -> DNSServiceOperation {
        let box = CallbackBox<BrowseHandler>(handler)
        var ref: DNSServiceRef?
        let status = DNSServiceBrowse(&ref, 0, 0, type, domain ?? "", { _, flags, interface, status, name, _, _, context in
            CallbackBox<BrowseHandler>.from(context)?(flags & DNSSD.addFlag != 0, interface, status, name.map { String(cString: $0) })
        }, box.context)
        return try start(status, ref, "browse", queue, box, onFailure)
    }

    typealias TypeHandler = (_ added: Bool, _ interface: UInt32, _ status: Int32, _ name: String?, _ type: String?) -> Void

    /// `DNSServiceBrowse` whose callback also gets the type field: what the meta-query
    /// `_services._dns-sd._udp` answers with (name `_http`, type `_tcp.`).
    static func browseTypes(
        queue: DispatchQueue, onFailure: @escaping @Sendable (Int32) -> Void, handler: @escaping TypeHandler
    ) throws(NearbyError) -> DNSServiceOperation {
        let box = CallbackBox<TypeHandler>(handler)
        var ref: DNSServiceRef?
        let status = DNSServiceBrowse(&ref, 0, 0, DNSSDType.metaQuery, "", { _, flags, interface, status, name, type, _, context in
            CallbackBox<TypeHandler>.from(context)?(
                flags & DNSSD.addFlag != 0, interface, status, name.map { String(cString: $0) }, type.map { String(cString: $0) })
        }, box.context)
        return try start(status, ref, "browse", queue, box, onFailure)
    }

    static func resolve(
        instance: String, type: String, domain: String, interface: UInt32, queue: DispatchQueue,
        onFailure: @escaping @Sendable (Int32) -> Void, handler: @escaping ResolveHandler
    ) throws(NearbyError) -> DNSServiceOperation {
        let box = CallbackBox<ResolveHandler>(handler)
        var ref: DNSServiceRef?
        let status = DNSServiceResolve(&ref, 0, interface, instance, type, domain, { _, _, interface, status, _, host, port, txtLength, txt, context in
            let bytes = txt.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(txtLength))) } ?? []
            CallbackBox<ResolveHandler>.from(context)?(interface, status, host.map { String(cString: $0) }, UInt16(bigEndian: port), bytes)
        }, box.context)
        return try start(status, ref, "resolve", queue, box, onFailure)
    }

    static func queryRecord(
        name: String, type: UInt16, interface: UInt32, queue: DispatchQueue,
        onFailure: @escaping @Sendable (Int32) -> Void, handler: @escaping RecordHandler
    ) throws(NearbyError) -> DNSServiceOperation {
        let box = CallbackBox<RecordHandler>(handler)
        var ref: DNSServiceRef?
        let status = DNSServiceQueryRecord(&ref, 0, interface, name, type, UInt16(kDNSServiceClass_IN), { _, flags, interface, status, _, type, _, length, data, _, context in
            let bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
            CallbackBox<RecordHandler>.from(context)?(flags & DNSSD.addFlag != 0, interface, status, type, bytes)
        }, box.context)
        return try start(status, ref, "query", queue, box, onFailure)
    }

    static func register(
        name: String, type: String, port: UInt16, txt: [UInt8], queue: DispatchQueue,
        onFailure: @escaping @Sendable (Int32) -> Void, handler: @escaping RegisterHandler
    ) throws(NearbyError) -> DNSServiceOperation {
        let box = CallbackBox<RegisterHandler>(handler)
        var ref: DNSServiceRef?
        let status = txt.withUnsafeBytes { record in
            DNSServiceRegister(&ref, 0, 0, name, type, nil, nil, port.bigEndian, UInt16(record.count), record.baseAddress, { _, _, status, name, _, _, context in
                CallbackBox<RegisterHandler>.from(context)?(status, name.map { String(cString: $0) })
            }, box.context)
        }
        return try start(status, ref, "register", queue, box, onFailure)
    }

    private static func start(
        _ status: DNSServiceErrorType, _ ref: DNSServiceRef?, _ operation: String, _ queue: DispatchQueue,
        _ box: AnyObject, _ onFailure: @escaping @Sendable (Int32) -> Void
    ) throws(NearbyError) -> DNSServiceOperation {
        try DNSServiceOperation.check(status, operation)
        guard let ref else { throw .discoveryFailed(operation: operation, code: status) }
        return DNSServiceOperation(ref: ServiceRef(raw: ref), queue: queue, retaining: box, onFailure: onFailure)
    }

    /// Avahi's compat layer prints a warning to stderr on first use unless this is set.
    static func silenceAvahiWarnings() { setenv("AVAHI_COMPAT_NOWARN", "1", 1) }

    static func interfaceName(_ index: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &buffer) != nil else { return nil }
        return string(buffer)
    }

    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A/AAAA record data as text; IPv6 link-local addresses get their `%interface` scope.
    static func address(type: UInt16, rdata: [UInt8], interface: UInt32) -> String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch (type, rdata.count) {
        case (UInt16(kDNSServiceType_A), 4):
            guard inet_ntop(AF_INET, rdata, &text, socklen_t(text.count)) != nil else { return nil }
            return string(text)
        case (UInt16(kDNSServiceType_AAAA), 16):
            guard inet_ntop(AF_INET6, rdata, &text, socklen_t(text.count)) != nil else { return nil }
            let address = string(text)
            if rdata[0] == 0xfe, rdata[1] & 0xc0 == 0x80, let name = interfaceName(interface) {
                return address + "%" + name
            }
            return address
        default:
            return nil
        }
    }
}
