/// An optional event field written as `null` when it has no value, so every line of a kind has the
/// same keys (docs/events.md) — where Swift's own encoding would leave the key out.
@propertyWrapper
package struct Null<Value: Sendable>: Sendable {
    package var wrappedValue: Value?
    package init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }
}

extension Null: Encodable where Value: Encodable {
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension Null: Decodable where Value: Decodable {
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

extension Null: Equatable where Value: Equatable {}

extension KeyedDecodingContainer {
    /// A missing key is no value, as for any optional.
    package func decode<Value: Decodable>(_ type: Null<Value>.Type, forKey key: Key) throws -> Null<Value> {
        try decodeIfPresent(type, forKey: key) ?? Null(wrappedValue: nil)
    }
}
