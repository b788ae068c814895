import Foundation

/// One kind of JSON-lines event. The envelope adds `event` and `time`; the body's own fields follow,
/// in snake_case (keys of user data, such as discovery info, are kept as given). Every kind and field is documented in docs/events.md and docs/events.schema.json.
public protocol EventBody: Encodable, Sendable {
    static var event: String { get }
}

public struct PeerRef: Codable, Sendable, Equatable {
    public var id: String
    /// Written as `null` when unknown, so every `peer` object has both fields.
    public var name: String?
    public init(id: String, name: String?) {
        self.id = id
        self.name = name
    }

    enum CodingKeys: String, CodingKey { case id, name }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
    }
}

public enum Events {
    public struct IdentityShown: EventBody {
        public static let event = "identity"
        public var peer: PeerRef
        public var fingerprint: String
        public var path: String
        public var created: String

        public init(peer: PeerRef, fingerprint: String, path: String, created: String) {
            self.peer = peer
            self.fingerprint = fingerprint
            self.path = path
            self.created = created
        }
    }

    public struct Advertising: EventBody {
        public static let event = "advertising"
        public var peer: PeerRef
        public var service: String
        public var domain: String
        public var port: Int
        public var info: SortedInfo

        public init(peer: PeerRef, service: String, domain: String, port: Int, info: [String: String]) {
            self.peer = peer
            self.service = service
            self.domain = domain
            self.port = port
            self.info = SortedInfo(info)
        }
    }

    public struct Browsing: EventBody {
        public static let event = "browsing"
        public var service: String
        public var domain: String

        public init(service: String, domain: String) {
            self.service = service
            self.domain = domain
        }
    }

    /// `found` and `updated` share their fields: everything known about the peer at that moment.
    public struct PeerSeen: EventBody {
        public static let event = "found"
        public var peer: PeerRef
        public var service: String
        public var kind: PeerKind
        public var protocolVersion: String?
        public var info: SortedInfo
        public var host: String?
        public var port: Int?
        public var addresses: [String]
        public var interface: String?
        public var isSelf: Bool
        public var elapsedMs: Int

        enum CodingKeys: String, CodingKey {
            case peer, service, kind
            case protocolVersion = "protocol"
            case info, host, port, addresses, interface
            case isSelf = "self"
            case elapsedMs = "elapsed_ms"
        }

        public init(
            peer: PeerRef, service: String, kind: PeerKind, protocolVersion: String?, info: [String: String],
            host: String?, port: Int?, addresses: [String], interface: String?, isSelf: Bool, elapsedMs: Int
        ) {
            self.peer = peer
            self.service = service
            self.kind = kind
            self.protocolVersion = protocolVersion
            self.info = SortedInfo(info)
            self.host = host
            self.port = port
            self.addresses = addresses
            self.interface = interface
            self.isSelf = isSelf
            self.elapsedMs = elapsedMs
        }

        /// Absent values are written as `null`, so every `found` line has the same fields.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(peer, forKey: .peer)
            try container.encode(service, forKey: .service)
            try container.encode(kind, forKey: .kind)
            try container.encode(protocolVersion, forKey: .protocolVersion)
            try container.encode(info, forKey: .info)
            try container.encode(host, forKey: .host)
            try container.encode(port, forKey: .port)
            try container.encode(addresses, forKey: .addresses)
            try container.encode(interface, forKey: .interface)
            try container.encode(isSelf, forKey: .isSelf)
            try container.encode(elapsedMs, forKey: .elapsedMs)
        }
    }

    public struct PeerUpdated: EventBody {
        public static let event = "updated"
        public var changed: [String]
        public var seen: PeerSeen

        public init(changed: [String], seen: PeerSeen) {
            self.changed = changed
            self.seen = seen
        }

        public func encode(to encoder: any Encoder) throws {
            try seen.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(changed, forKey: .changed)
        }
        enum Key: String, CodingKey { case changed }
    }

    public struct Lost: EventBody {
        public static let event = "lost"
        public var peer: PeerRef
        public var service: String
        public var elapsedMs: Int

        enum CodingKeys: String, CodingKey {
            case peer, service
            case elapsedMs = "elapsed_ms"
        }

        public init(peer: PeerRef, service: String, elapsedMs: Int) {
            self.peer = peer
            self.service = service
            self.elapsedMs = elapsedMs
        }
    }

    public struct Failure: EventBody {
        public static let event = "error"
        public var code: String
        public var message: String
        public var exitStatus: Int32

        enum CodingKeys: String, CodingKey {
            case code, message
            case exitStatus = "exit_status"
        }

        public init(code: String, message: String, exitStatus: Int32) {
            self.code = code
            self.message = message
            self.exitStatus = exitStatus
        }
    }
}

/// A string map written with its keys sorted, so the same info prints the same line every time.
public struct SortedInfo: Encodable, Sendable, Equatable {
    public var values: [String: String]
    public init(_ values: [String: String]) { self.values = values }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        for key in values.keys.sorted() {
            try container.encode(values[key], forKey: AnyKey(stringValue: key))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

public enum PeerKind: String, Codable, Sendable {
    /// A nearby node: its TXT record carries our protocol key.
    case nearby
    /// A plain Multipeer Connectivity app (iPhone, Mac) or anything else advertising the MPC format.
    case mpc
}

/// Formats events as single JSON lines: `{"event":…,"time":…,<body fields, keys sorted>}`. The
/// envelope is written by hand because JSONEncoder does not keep key order; sorting the body's keys
/// makes the same event print the same way every time.
public struct EventEncoder: Sendable {
    public init() {}

    public func line(_ body: some EventBody, at date: Date = Date()) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let head = #"{"event":"# + Self.quoted(type(of: body).event) + #","time":"# + Self.quoted(Self.timestamp(date))
        guard let data = try? encoder.encode(body), data.first == UInt8(ascii: "{") else {
            // Encoding our own plain structs cannot fail; never print a half line if it somehow does.
            return head + #","code":"internal","message":"event could not be encoded"}"#
        }
        let fields = data.dropFirst()
        return head + (fields.first == UInt8(ascii: "}") ? "" : ",") + String(decoding: fields, as: UTF8.self)
    }

    /// RFC 3339, UTC, milliseconds: `2026-11-21T21:20:23.123Z`.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    private static func quoted(_ string: String) -> String {
        let data = (try? JSONEncoder().encode(string)) ?? Data(#""""#.utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
