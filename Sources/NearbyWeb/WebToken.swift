/// The only key to a web share: 128 random bits (the system's CSPRNG), written as 26 lowercase
/// base-32 letters so it survives a QR code, a URL and a person reading it aloud. A request whose
/// path does not start with `/TOKEN/` gets the wrong link's 404 (`WebRoute.notFound`).
package struct WebToken: Sendable, Equatable, CustomStringConvertible {
    package let text: String

    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    package init(text: String) { self.text = text }

    /// A new token from `SystemRandomNumberGenerator` (getrandom(2) on Linux, arc4random on macOS).
    package static func random() -> WebToken {
        var generator = SystemRandomNumberGenerator()
        return make(from: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// 16 bytes as 26 base-32 letters (the last one holds 3 bits).
    static func make(from bytes: [UInt8]) -> WebToken {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return WebToken(text: String(decoding: out, as: UTF8.self))
    }

    /// Compares in time that depends only on the lengths: a guesser learns nothing from how fast a 404 comes.
    package func matches<S: Collection>(_ candidate: S) -> Bool where S.Element == UInt8 {
        let mine = Array(text.utf8)
        guard candidate.count == mine.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(mine, candidate) { difference |= a ^ b }
        return difference == 0
    }

    package var description: String { text }
}

/// What a request asks for, decided from its method and path alone (pure: `WebRouteTests`).
enum WebRoute: Equatable, Sendable {
    /// The share's page: the files (sending) or the upload form (receiving).
    case page
    /// Shared item `index` (a file, or a directory as one .zip).
    case item(Int)
    /// A multipart/form-data upload (receiving only).
    case upload
    /// Anything else, a wrong or missing token first: 404 and no other byte.
    case notFound

    /// `/TOKEN/`, `/TOKEN/N/NAME`, `POST /TOKEN/upload`; a query string is ignored.
    package static func of(method: String, uri: String, token: WebToken, items: Int, uploads: Bool) -> WebRoute {
        let path = uri.utf8.split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false).first.map(Array.init) ?? []
        let parts = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        // "", TOKEN, rest…
        guard parts.count >= 3, parts[0].isEmpty, token.matches(parts[1]) else { return .notFound }
        let rest = Array(parts.dropFirst(2))
        let head = String(decoding: rest[0], as: UTF8.self)
        switch (method, rest.count, head) {
        case ("GET", 1, ""), ("HEAD", 1, ""): return .page
        case ("POST", 1, "upload") where uploads: return .upload
        case ("GET", 2, _), ("HEAD", 2, _):
            guard !head.isEmpty, head.utf8.count <= 6, head.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let index = Int(head), index < items else { return .notFound }
            return .item(index)
        default: return .notFound
        }
    }
}
