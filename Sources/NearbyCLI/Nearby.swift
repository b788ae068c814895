import ArgumentParser
import NearbyCore

/// The `nearby` command: Multipeer Connectivity for the command line.
package struct Nearby: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "nearby",
        abstract: "Find peers on the local network and talk to them — Multipeer Connectivity for the shell.",
        discussion: """
            Every state change is printed on stdout as one JSON object per line (see docs/events.md) \
            when stdout is not a terminal, or with --json; on a terminal, as a short line for people \
            (--human or NEARBY_OUTPUT=human forces that into a pipe too; NO_COLOR turns colours off). \
            Other words for people go to stderr. Peers are found with DNS-SD (Bonjour / Avahi) in the format \
            of Apple's Multipeer Connectivity, so real MPC apps show up too.

            Examples:
              nearby advertise --info role=printer
              nearby browse --timeout 5
              nearby browse --peer alice --timeout 10 && echo "alice is here"
            """,
        version: NearbyVersion.current,
        subcommands: [
            Advertise.self, Browse.self, Invite.self, Accept.self, Send.self, SendFile.self, Stream.self,
            Disconnect.self, IdentityCommand.self, Doctor.self, Watch.self,
        ]
    )

    package init() {}
}

enum NearbyVersion {
    package static let current = "0.1.0"
}
