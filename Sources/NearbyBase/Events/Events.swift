import Foundation

/// One kind of JSON-lines event. The envelope adds `event` and `time`; the body's own fields follow,
/// in snake_case (keys of user data, such as discovery info, are kept as given). Every kind and field is documented in docs/events.md and docs/events.schema.json.
package protocol EventBody: Codable, Sendable {
    static var event: String { get }
}

package struct PeerRef: Codable, Sendable, Equatable {
    package var id: String
    /// Written as `null` when unknown, so every `peer` object has both fields.
    @Null package var name: String?
    package init(id: String, name: String?) {
        self.id = id
        self.name = name
    }

}

package enum Events {
    package struct IdentityShown: EventBody {
        package static let event = "identity"
        package var peer: PeerRef
        package var fingerprint: String
        package var path: String
        package var created: String

        package init(peer: PeerRef, fingerprint: String, path: String, created: String) {
            self.peer = peer
            self.fingerprint = fingerprint
            self.path = path
            self.created = created
        }
    }

    package struct Advertising: EventBody {
        package static let event = "advertising"
        package var peer: PeerRef
        package var service: String
        package var domain: String
        package var port: Int
        package var info: SortedInfo
        /// The DNS-SD instance name, only when it is not the peer ID: another host already used
        /// that, and the daemon gave us its alternative (`ID #2`).
        package var instance: String?
        /// When the command ends by itself: after this many seconds (`accept --timeout`); omitted
        /// for a node that runs until Ctrl-C.
        package var stopsAfter: Double?

        package init(peer: PeerRef, service: String, domain: String, port: Int, info: [String: String], instance: String? = nil, stopsAfter: Double? = nil) {
            self.peer = peer
            self.service = service
            self.domain = domain
            self.port = port
            self.info = SortedInfo(info)
            self.instance = instance
            self.stopsAfter = stopsAfter
        }
    }

    package struct Browsing: EventBody {
        package static let event = "browsing"
        package var service: String
        package var domain: String
        /// When browsing ends by itself: after this many seconds (`--timeout`, `--peer`'s default)…
        package var stopsAfter: Double? = nil
        /// …or, with `--now`, once the answers stop coming. Omitted otherwise (Ctrl-C ends it).
        package var now: Bool? = nil

        enum CodingKeys: String, CodingKey {
            case service, domain, now
            case stopsAfter = "stops_after"
        }

        package init(service: String, domain: String, stopsAfter: Double? = nil, now: Bool = false) {
            self.service = service
            self.domain = domain
            self.stopsAfter = stopsAfter
            self.now = now ? true : nil
        }
    }

    /// `found` and `updated` share their fields: everything known about the peer at that moment.
    package struct PeerSeen: EventBody {
        package static let event = "found"
        package var peer: PeerRef
        package var service: String
        package var kind: PeerKind
        @Null package var protocolVersion: String?
        package var info: SortedInfo
        @Null package var host: String?
        @Null package var port: Int?
        package var addresses: [String]
        @Null package var interface: String?
        package var isSelf: Bool
        package var elapsedMs: Int
        /// The unicast DNS domain (`--domain`); absent on mDNS.
        package var domain: String?

        enum CodingKeys: String, CodingKey {
            case peer, service, kind
            case protocolVersion = "protocol"
            case info, host, port, addresses, interface, domain
            case isSelf = "self"
            case elapsedMs = "elapsed_ms"
        }

        package init(
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

    }

    package struct PeerUpdated: EventBody {
        package static let event = "updated"
        package var changed: [String]
        package var seen: PeerSeen

        package init(changed: [String], seen: PeerSeen) {
            self.changed = changed
            self.seen = seen
        }

        package func encode(to encoder: any Encoder) throws {
            try seen.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(changed, forKey: .changed)
        }

        package init(from decoder: any Decoder) throws {
            seen = try PeerSeen(from: decoder)
            changed = try decoder.container(keyedBy: Key.self).decode([String].self, forKey: .changed)
        }
        enum Key: String, CodingKey { case changed }
    }

    package struct Lost: EventBody {
        package static let event = "lost"
        package var peer: PeerRef
        package var service: String
        package var elapsedMs: Int
        /// The unicast DNS domain (`--domain`); absent on mDNS.
        package var domain: String?

        enum CodingKeys: String, CodingKey {
            case peer, service, domain
            case elapsedMs = "elapsed_ms"
        }

        package init(peer: PeerRef, service: String, elapsedMs: Int) {
            self.peer = peer
            self.service = service
            self.elapsedMs = elapsedMs
        }
    }

    package struct Failure: EventBody {
        package static let event = "error"
        package var code: String
        package var message: String
        package var exitStatus: Int32
        /// `peer-not-found` after a lookup: peers on the service with a name near the one asked
        /// for, the same name on other service types, and the command to run next.
        package var near: [PeerRef]?
        package var elsewhere: [PeerSearchReport.Sighting]?
        package var hint: String?

        enum CodingKeys: String, CodingKey {
            case code, message, near, elsewhere, hint
            case exitStatus = "exit_status"
        }

        package init(code: String, message: String, exitStatus: Int32) {
            self.code = code
            self.message = message
            self.exitStatus = exitStatus
        }

        /// The event for `error`, with what a failed lookup saw when it carries that.
        package init(_ error: NearbyError, message: String? = nil) {
            self.init(code: error.code, message: message ?? error.errorDescription ?? "\(error)", exitStatus: error.exitStatus.rawValue)
            if case let .peerNotFound(query, _, seen?) = error {
                near = seen.near
                elsewhere = seen.elsewhere
                hint = seen.hint(for: query)
            }
        }
    }
}

/// A string map written with its keys sorted, so the same info prints the same line every time.
package struct SortedInfo: Codable, Sendable, Equatable {
    package var values: [String: String]
    package init(_ values: [String: String]) { self.values = values }

    package init(from decoder: any Decoder) throws {
        values = try decoder.singleValueContainer().decode([String: String].self)
    }

    package func encode(to encoder: any Encoder) throws {
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

package enum PeerKind: String, Codable, Sendable {
    /// A nearby node: its TXT record carries our protocol key.
    case nearby
    /// A plain Multipeer Connectivity app (iPhone, Mac) or anything else advertising the MPC format.
    case mpc
    /// Not MPC at all: no display name (`_d`) in its TXT record, such as a web server found with
    /// `--service http`.
    case other
    /// A LocalSend device (`--localsend`), found by its multicast announcement.
    case localsend
}

/// Formats events as single JSON lines: `{"event":…,"time":…,<body fields, keys sorted>}`. The
/// envelope is written by hand because JSONEncoder does not keep key order; sorting the body's keys
/// makes the same event print the same way every time. What a terminal would act on (DEL, C1,
/// bidi and zero-width characters, which JSON allows raw) is written as `\uXXXX`: the same value
/// for a JSON reader (`TerminalText.jsonLine`).
package struct EventEncoder: Sendable {
    package init() {}

    package func line(_ body: some EventBody, at date: Date = Date()) -> String {
        TerminalText.jsonLine(encoded(body, at: date))
    }

    private func encoded(_ body: some EventBody, at date: Date) -> String {
        // Room for a typical line at once: the fields are appended in place, not copied at each `+`.
        var line = String()
        line.reserveCapacity(384)
        line += #"{"event":"#
        line += Self.quoted(type(of: body).event)
        line += #","time":"#
        line += Self.quoted(Self.timestamp(date))
        if let direct = body as? any DirectJSON {
            direct.writeFields(into: &line)
            return line + "}"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        guard let data = try? encoder.encode(body), data.first == UInt8(ascii: "{") else {
            // Encoding our own plain structs cannot fail; never print a half line if it somehow does.
            return line + #","code":"internal","message":"event could not be encoded"}"#
        }
        let fields = data.dropFirst()
        return line + (fields.first == UInt8(ascii: "}") ? "" : ",") + String(decoding: fields, as: UTF8.self)
    }

    /// RFC 3339, UTC, milliseconds: `2026-11-21T21:20:23.123Z`.
    package static func timestamp(_ date: Date) -> String {
        let since = date.timeIntervalSince1970
        var seconds = time_t(since.rounded(.down))
        let milliseconds = min(999, max(0, Int(((since - Double(seconds)) * 1000).rounded(.down))))
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else {
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let ms = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }

    /// A JSON string, escaped as JSONEncoder escapes it (slashes left alone).
    package static func quoted(_ string: String) -> String {
        guard ByteScan.needsJSONEscape(string) else {
            return "\"" + string + "\""
        }
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// An event written without JSONEncoder, for the kinds that come by the hundred thousand (one per
/// line of `send --lines`): the same fields, keys sorted, as the encoder would write.
package protocol DirectJSON {
    /// Appends `,"key":value` for each field, keys in order.
    func writeFields(into line: inout String)
}

extension PeerRef {
    var json: String {
        #"{"id":"# + EventEncoder.quoted(id) + #","name":"# + (name.map(EventEncoder.quoted) ?? "null") + "}"
    }
}

extension Events.Message: DirectJSON {
    package func writeFields(into line: inout String) {
        line += #","bytes":"# + String(bytes)
        if let data { line += #","data":"# + EventEncoder.quoted(data) }
        line += #","peer":"# + peer.json + #","reliable":"# + (reliable ? "true" : "false")
        if let text { line += #","text":"# + EventEncoder.quoted(text) }
    }
}
