import Foundation
import NearbyDNS
import NearbyBase

/// A DNS server as given to `--dns-server HOST[:PORT]` (an IPv6 address in brackets when a port
/// follows: `[::1]:5353`).
package struct DNSServerAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int

    package init(host: String, port: Int = 53) {
        self.host = host
        self.port = port
    }

    package static func parse(_ text: String) throws(NearbyError) -> DNSServerAddress {
        let bad = NearbyError.invalidArgument("invalid \(Spelling.option(.dnsServer)) '\(text)': expected HOST or HOST:PORT ([IPv6]:PORT)")
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return DNSServerAddress(host: host) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port), !host.isEmpty else { throw bad }
            return DNSServerAddress(host: host, port: port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count > 2 { return DNSServerAddress(host: text) }  // a bare IPv6 address
        guard let host = parts.first, !host.isEmpty else { throw bad }
        guard parts.count == 2 else { return DNSServerAddress(host: String(host)) }
        guard let port = Int(parts[1]), (1...65535).contains(port) else { throw bad }
        return DNSServerAddress(host: String(host), port: port)
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The first `nameserver` of /etc/resolv.conf (or `path`), as the system's resolver uses it.
    package static func systemResolver(path: String = "/etc/resolv.conf") -> DNSServerAddress? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if words.count >= 2, words[0] == "nameserver" { return DNSServerAddress(host: String(words[1])) }
        }
        return nil
    }
}

/// Whether a reply answers our question: same ID, a response, same opcode and same question
/// (names compared case-insensitively). Anything else, from anyone, is ignored (RFC 5452).
enum DNSReplyMatch {
    package static func matches(_ reply: DNSMessage, _ query: DNSMessage) -> Bool {
        reply.id == query.id && reply.isResponse && reply.opcode == query.opcode && reply.questions == query.questions
    }
}
