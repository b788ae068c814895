import NearbyBase
/// A running node and the options a client's command was given for a node of its own.
extension NodeExpectations {
    /// Why the running node (`configuration`, shown as `displayName`) cannot serve a request made
    /// with these expectations (nil: it can): each option names what the node has and how to get
    /// what was asked.
    func conflict(running configuration: NodeConfiguration, as displayName: String) -> NearbyError? {
        let expected = self
        let running = "a node is running for this identity on \(configuration.service.name)"
        if let name = expected.displayName, name != displayName {
            let option = Spelling.option(.name)
            return .invalidArgument(
                "\(option) '\(name)' applies to a node this command starts, but \(running) as '\(displayName)': "
                    + "leave out \(option), or stop that node and run the command again")
        }
        if let encryption = expected.encryption, encryption != configuration.encryption {
            return .invalidArgument(
                "\(Spelling.option(.encryption, encryption.rawValue)) applies to a node this command starts, but \(running) with "
                    + "\(Spelling.option(.encryption, configuration.encryption.rawValue)): leave out \(Spelling.option(.encryption)), "
                    + "or restart that node with it")
        }
        if let directory = expected.saveDirectory, directory != configuration.saveDirectory {
            let option = Spelling.option(.saveDirectory)
            let has = configuration.saveDirectory.map { "saves files to \($0)" } ?? "takes no files (it was started without \(option))"
            return .invalidArgument(
                "\(option) \(directory) applies to a node this command starts, but \(running) that \(has): "
                    + "leave out \(option), or restart that node with \(option) \(directory)")
        }
        if let domains = expected.domains,
           let missing = domains.first(where: { asked in !configuration.domains.contains { $0.lowercased() == asked.lowercased() } }) {
            let option = Spelling.option(.domain, missing.hasSuffix(".") ? String(missing.dropLast()) : missing)
            return .invalidArgument(
                "\(option) applies to a node that serves that domain, but \(running) in "
                    + configuration.domains.joined(separator: ", ")
                    + ": leave out \(Spelling.option(.domain)), or stop that node and start it again with \(option)")
        }
        if expected.offLink == true, configuration.link {
            let option = Spelling.option(.noLink)
            return .invalidArgument(
                "\(option) applies to a node that stays off the link, but \(running) on the link (local.) too: "
                    + "leave out \(option), or stop that node and start it again with \(option)")
        }
        return nil
    }
}
