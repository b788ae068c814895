import Foundation
import NearbyBase

/// One event read back from its JSON line (a running node's answer, or our own event): its kind,
/// its time, and its typed body when this version knows the kind and the line has every field the
/// kind has. A line of a kind this version does not know (a newer node), or one missing a field
/// (an older node), keeps its fields as `JSONValue`s, so it can still be shown.
struct DecodedEvent: Sendable {
    package var kind: String
    package var time: Date?
    /// Nil for a kind this version does not know, or a line it cannot read as that kind.
    package var body: (any EventBody)?
    /// The line's fields other than `event` and `time`; for our own events, only when asked for.
    package var fields: [String: JSONValue]

    /// Our own event, as it is emitted: nothing to decode.
    package init(_ body: some EventBody, at time: Date = Date()) {
        kind = type(of: body).event
        self.time = time
        self.body = body
        fields = [:]
    }

    /// Reads one event line; nil when it is not a JSON object with a string `event`.
    package init?(line: String, kinds: [any EventBody.Type] = Events.kinds) {
        let data = Data(line.utf8)
        guard case let .object(object)? = try? JSONDecoder().decode(JSONValue.self, from: data),
              case let .string(kind)? = object["event"]
        else { return nil }
        self.kind = kind
        if case let .string(text)? = object["time"] { time = Self.date(text) }
        fields = object.filter { $0.key != "event" && $0.key != "time" }
        body = kinds.first { $0.event == kind }.flatMap { try? Self.decode($0, from: data) }
    }

    /// The fields of the line, also for our own events (encoded on demand: for the generic line).
    package var allFields: [String: JSONValue] {
        guard fields.isEmpty, let body,
              let value = try? JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(body)),
              case let .object(object) = value
        else { return fields }
        return object
    }

    private static func decode<Body: EventBody>(_ type: Body.Type, from data: Data) throws -> Body {
        try JSONDecoder().decode(type, from: data)
    }

    /// RFC 3339, with or without fractions of a second.
    package static func date(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}

extension Events {
    /// Every kind the core emits, for `DecodedEvent` (a command adds its own).
    package static let kinds: [any EventBody.Type] = [
        IdentityShown.self, Advertising.self, Browsing.self, PeerSeen.self, PeerUpdated.self, Lost.self, Failure.self,
        Invitation.self, Invited.self, Accepted.self, Declined.self, Connecting.self, Connected.self, Disconnected.self,
        Message.self, Sent.self, Rejected.self, FileStarted.self, Progress.self, FileSent.self, FileReceived.self,
        Skipped.self, FileFailed.self, StreamOpened.self, StreamClosed.self, Waiting.self, Looking.self,
        NothingFound.self, ServiceTypeSeen.self, ServiceSeen.self, Check.self, Summary.self, Suppressed.self,
        DatagramsDropped.self, Reconnecting.self, Resumed.self,
    ]
}

/// A JSON value, typed: what a line of an unknown kind is read as.
enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(bool): try container.encode(bool)
        case let .number(number): try container.encode(number)
        case let .string(string): try container.encode(string)
        case let .array(array): try container.encode(array)
        case let .object(object): try container.encode(object)
        }
    }

    /// A string, number or boolean as text; nil for objects, arrays and null.
    package var scalar: String? {
        switch self {
        case let .string(string): string
        case let .bool(bool): String(bool)
        case let .number(number):
            number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        default: nil
        }
    }
}
