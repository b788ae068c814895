/// A running node and the options a client's command was given for a node of its own.
extension Node {
    /// Why this node cannot serve a request made with `expected` (nil: it can): each option names
    /// what the node has and how to get what was asked.
    func conflict(with expected: NodeExpectations) -> NearbyError? {
        let running = "a node is running for this identity on \(configuration.service.name)"
        if let name = expected.displayName, name != displayName {
            return .invalidArgument(
                "--name '\(name)' applies to a node this command starts, but \(running) as '\(displayName)': "
                    + "leave out --name, or stop that node and run the command again")
        }
        if let encryption = expected.encryption, encryption != configuration.encryption {
            return .invalidArgument(
                "--encryption \(encryption.rawValue) applies to a node this command starts, but \(running) with "
                    + "--encryption \(configuration.encryption.rawValue): leave out --encryption, or restart that node with it")
        }
        if let directory = expected.saveDirectory, directory != configuration.saveDirectory {
            let has = configuration.saveDirectory.map { "saves files to \($0)" } ?? "takes no files (it was started without --save-dir)"
            return .invalidArgument(
                "--save-dir \(directory) applies to a node this command starts, but \(running) that \(has): "
                    + "leave out --save-dir, or restart that node with --save-dir \(directory)")
        }
        return nil
    }
}
