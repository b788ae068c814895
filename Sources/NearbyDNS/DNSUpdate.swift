/// An RFC 2136 UPDATE: the zone, prerequisites and the changes, in the order the server applies them.
package struct DNSUpdate: Sendable, Equatable {
    package var zone: DNSName
    package var prerequisites: [DNSRecord] = []
    package var changes: [DNSRecord] = []

    package init(zone: DNSName) { self.zone = zone }

    /// Requires the RRset of `record`'s name and type to hold exactly `record` (with the others given
    /// the same way) when the server applies the update (RFC 2136 §2.4.2, value dependent: class
    /// IN, TTL 0); otherwise the server answers NXRRSET and changes nothing.
    package mutating func require(_ record: DNSRecord) {
        prerequisites.append(DNSRecord(name: record.name, type: record.type, rrClass: .in, ttl: 0, data: record.data))
    }

    /// Adds a record (RFC 2136 §2.5.1).
    package mutating func add(_ record: DNSRecord) { changes.append(record) }

    /// Deletes every record of `type` at `name` (§2.5.2: class ANY, TTL 0, no data).
    package mutating func deleteSet(_ name: DNSName, _ type: DNSType) {
        changes.append(DNSRecord(name: name, type: type, rrClass: .any, ttl: 0, data: .empty))
    }

    /// Deletes one record (§2.5.4: class NONE, TTL 0, the record's data).
    package mutating func delete(_ record: DNSRecord) {
        changes.append(DNSRecord(name: record.name, type: record.type, rrClass: .none, ttl: 0, data: record.data))
    }

    package func message(id: UInt16) -> DNSMessage {
        var message = DNSMessage(id: id, opcode: .update)
        message.questions = [DNSQuestion(name: zone, type: .soa)]
        message.answers = prerequisites
        message.authority = changes
        return message
    }
}

/// The records of one DNS-SD service instance in a unicast domain (RFC 6763 §4–§6): the PTR that
/// lists it under its type, its SRV and TXT, and the A/AAAA of its host.
package struct ServiceRecords: Sendable, Equatable {
    package var instance: String
    /// e.g. `_nearby._tcp`
    package var serviceType: String
    package var domain: DNSName
    /// The host's first label, in `domain`.
    package var hostLabel: String
    package var port: UInt16
    package var txt: [[UInt8]]
    package var ipv4: [[UInt8]]
    package var ipv6: [[UInt8]]
    package var ttl: UInt32

    package init(instance: String, serviceType: String, domain: DNSName, hostLabel: String, port: UInt16,
                txt: [[UInt8]], ipv4: [[UInt8]], ipv6: [[UInt8]], ttl: UInt32) {
        self.instance = instance
        self.serviceType = serviceType
        self.domain = domain
        self.hostLabel = hostLabel
        self.port = port
        self.txt = txt
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
    }

    package func typeName() throws(DNSError) -> DNSName { try DNSName(serviceType).appending(domain) }
    package func instanceName() throws(DNSError) -> DNSName { try typeName().prepending(instance) }
    package func hostName() throws(DNSError) -> DNSName { try domain.prepending(hostLabel) }

    package func ptr() throws(DNSError) -> DNSRecord {
        DNSRecord(name: try typeName(), type: .ptr, ttl: ttl, data: .ptr(try instanceName()))
    }

    /// Replaces SRV, TXT and the host's addresses, and adds the PTR: a registration or a refresh.
    package func register() throws(DNSError) -> DNSUpdate {
        let instance = try instanceName()
        let host = try hostName()
        var update = DNSUpdate(zone: domain)
        update.deleteSet(instance, .srv)
        update.deleteSet(instance, .txt)
        update.deleteSet(host, .a)
        update.deleteSet(host, .aaaa)
        update.add(try ptr())
        update.add(DNSRecord(name: instance, type: .srv, ttl: ttl, data: .srv(priority: 0, weight: 0, port: port, target: host)))
        update.add(DNSRecord(name: instance, type: .txt, ttl: ttl, data: .txt(txt)))
        for address in ipv4 { update.add(DNSRecord(name: host, type: .a, ttl: ttl, data: .a(address))) }
        for address in ipv6 { update.add(DNSRecord(name: host, type: .aaaa, ttl: ttl, data: .aaaa(address))) }
        return update
    }

    /// Removes everything `register` added.
    package func deregister() throws(DNSError) -> DNSUpdate {
        var update = DNSUpdate(zone: domain)
        update.delete(try ptr())
        update.deleteSet(try instanceName(), .srv)
        update.deleteSet(try instanceName(), .txt)
        update.deleteSet(try hostName(), .a)
        update.deleteSet(try hostName(), .aaaa)
        return update
    }
}
