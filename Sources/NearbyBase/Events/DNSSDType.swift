import Foundation

/// Full DNS-SD service types as `browse --service` and `browse --types` take and print them.
package enum DNSSDType {
    /// The meta-query every responder answers with the types it publishes (RFC 6763 9).
    package static let metaQuery = "_services._dns-sd._udp"

    /// `_http._tcp` (trailing dot and `.local.` allowed) → `_http._tcp`; nil for anything that is
    /// not a DNS-SD type, such as an MPC service name like `chat`, so the old meaning stays.
    package static func parse(_ text: String) -> String? {
        var name = text
        for suffix in [".", "local.", "local"] where name.hasSuffix(suffix) && name != suffix {
            if suffix == "." || name.hasSuffix("." + suffix) { name.removeLast(suffix.count) }
            if name.hasSuffix(".") { name.removeLast() }
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count == 2, let service = labels.first, let proto = labels.last,
              proto == "_tcp" || proto == "_udp", service.hasPrefix("_"), (2...64).contains(service.utf8.count)
        else { return nil }
        let body = service.dropFirst()
        guard body.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }),
              body.first != "-", body.last != "-"
        else { return nil }
        return name
    }

    /// The meta-query's answer (`_http` in `_tcp.` or `_tcp.local.`) as a type, `_http._tcp`.
    package static func fromMetaAnswer(name: String, type: String) -> String? {
        let proto = type.split(separator: ".").first.map(String.init) ?? ""
        return parse("\(name).\(proto)")
    }
}
