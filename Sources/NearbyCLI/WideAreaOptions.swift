import ArgumentParser
import NearbyCore

/// `--domain`, `--dns-server`, `--dns-key`: wide-area DNS-SD, part of `ServiceOptions` so every
/// command that discovers or advertises takes them.
struct WideAreaOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Browse and advertise in this unicast DNS domain instead of on the link (wide-area DNS-SD).",
            discussion: "Defaults to $NEARBY_DOMAIN; without either, mDNS (local.) as usual. Records are registered with DNS UPDATE signed with TSIG; see 'Beyond one link' in the README.",
            valueName: "domain"))
    var domain: String?

    @Option(
        name: .customLong("dns-server"),
        help: ArgumentHelp(
            "The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).",
            discussion: "Defaults to the domain's SRV _dns-update._udp or SOA primary for updates, and the system resolver for queries.",
            valueName: "host[:port]"))
    var dnsServer: String?

    @Option(
        name: .customLong("dns-key"),
        help: ArgumentHelp(
            "The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).",
            discussion: "Defaults to $NEARBY_HOME/dns.key. Needed to advertise; browsing needs no key.",
            valueName: "file"),
        completion: .file())
    var dnsKey: String?

    /// The settings, or nil when no domain is given (mDNS).
    func resolve(_ context: CommandContext) throws(NearbyError) -> WideAreaSettings? {
        let fromEnvironment = context.environment["NEARBY_DOMAIN"].flatMap { $0.isEmpty ? nil : $0 }
        guard let domain = domain ?? fromEnvironment else {
            if dnsServer != nil || dnsKey != nil {
                throw .invalidArgument("--dns-server and --dns-key go with --domain (or NEARBY_DOMAIN)")
            }
            return nil
        }
        let server = try dnsServer.map { (text: String) throws(NearbyError) in try DNSServerAddress.parse(text) }
        var settings = try WideAreaSettings(
            domain: domain, server: server,
            keyPath: dnsKey ?? context.paths.home + "/" + WideAreaSettings.defaultKeyFile)
        settings.apply(environment: context.environment)
        return settings
    }
}
