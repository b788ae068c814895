import NearbyCore
import NearbyBase
import NearbyDiscovery

extension Nearby.Browse {
    /// `browse --domains`: one `browse-domain` event per domain the network offers (RFC 6763 §11),
    /// under `--domain` if given, else under the resolver's search domains and the local reverse
    /// zones; then exits.
    func runDomains(_ context: CommandContext) async throws {
        try await reporting(context, verbose: output.verbose) {
            let given = try serviceOptions.wideArea.resolveAll(context)
            var settings = try given.first ?? WideAreaSettings(domain: "invalid", server: nil, keyPath: "")
            settings.apply(environment: context.environment)
            let candidates = given.isEmpty ? WideAreaDNS.candidateDomains(resolvConf: settings.resolvConf) : given.map(\.domain)
            for found in try await WideAreaDNS(settings: settings).browseDomains(in: candidates) {
                context.events.emit(Events.BrowseDomainSeen(domain: found.domain, isDefault: found.isDefault, from: found.from))
            }
        }
    }
}

extension Events {
    /// `browse --domains`: a browse domain the network offers.
    package struct BrowseDomainSeen: EventBody {
        package static let event = "browse-domain"
        package var domain: String
        package var isDefault: Bool
        package var from: String

        enum CodingKeys: String, CodingKey {
            case domain
            case isDefault = "default"
            case from
        }
    }
}
