import ArgumentParser
import NearbyCore
import NearbyBase
import NearbyDiscovery

/// `--domain`, `--dns-server`, `--dns-key`: wide-area DNS-SD, part of `ServiceOptions` so every
/// command that discovers or advertises takes them.
struct WideAreaOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.",
            discussion: "Adds to the link (mDNS, local.), as Bonjour does: a node registers on the link and in each domain, and browsing and peer lookups search all of them. Defaults to $NEARBY_DOMAIN (a list, separated by commas or spaces). Records are registered with DNS UPDATE signed with TSIG; see 'Beyond one link' in the README.",
            valueName: "domain"))
    var domain: [String] = []

    @Flag(
        name: .customLong("no-link"),
        help: ArgumentHelp("With --domain: stay off the link (no mDNS); register and browse in the domains only."))
    var noLink = false

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

    /// Whether to be on the link too (every node is, unless `--no-link`).
    var link: Bool { !noLink }

    /// The first domain's settings, or nil when no domain is given (mDNS only).
    func resolve(_ context: CommandContext) throws(NearbyError) -> WideAreaSettings? {
        try resolveAll(context).first
    }

    /// Every domain's settings, each once, in the order given; empty when none is (mDNS only).
    func resolveAll(_ context: CommandContext) throws(NearbyError) -> [WideAreaSettings] {
        let fromEnvironment = (context.environment["NEARBY_DOMAIN"] ?? "")
            .split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        let names = domain.isEmpty ? fromEnvironment : domain
        guard !names.isEmpty else {
            if dnsServer != nil || dnsKey != nil {
                throw .invalidArgument("--dns-server and --dns-key go with --domain (or NEARBY_DOMAIN)")
            }
            if noLink { throw .invalidArgument("--no-link goes with --domain (or NEARBY_DOMAIN): a node must be somewhere") }
            return []
        }
        let server = try dnsServer.map { (text: String) throws(NearbyError) in try DNSServerAddress.parse(text) }
        var all: [WideAreaSettings] = []
        for name in names {
            var settings = try WideAreaSettings(
                domain: name, server: server,
                keyPath: dnsKey ?? context.paths.home + "/" + WideAreaSettings.defaultKeyFile)
            settings.apply(environment: context.environment)
            if !all.contains(where: { $0.domain == settings.domain }) { all.append(settings) }
        }
        return all
    }
}
