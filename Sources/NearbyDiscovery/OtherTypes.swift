import NearbyBase

/// The other service types on the link while a browse runs: a browse of a type nobody advertises
/// names the ones that are there (`--service chat` instead of `--service caht`), as a lookup names
/// the types a peer of that name is on (`ElsewhereSearch`). Best effort: a failure finds nothing.
package final class OtherTypes: Sendable {
    private let skipping: String
    private let state = Locked<(instances: [String: Int], stop: (@Sendable () -> Void)?, stopped: Bool)>(([:], nil, false))

    /// At most this many types are named.
    package static let shown = 8

    /// `skipping`: the type browsed (`_nearby._tcp`), not named.
    package init(skipping: String) { self.skipping = skipping }

    package func start() {
        let types = TypeBrowser()
        let kept = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stop = { types.stop() }
            return true
        }
        guard kept else { return types.stop() }
        Task { [self] in
            guard let updates = try? await types.start() else { return }
            for await update in updates {
                guard case let .type(type, instances) = update, type != skipping, type.hasSuffix("._tcp") else { continue }
                state.withLock { $0.instances[type] = instances }
            }
        }
    }

    /// Stops browsing; the types that have instances now, sorted.
    package func finish() -> [String] {
        let (instances, stop) = state.withLock { state in
            state.stopped = true
            defer { state.stop = nil }
            return (state.instances, state.stop)
        }
        stop?()
        return instances.filter { $0.value > 0 }.keys.sorted()
    }

    /// `; on the link: _chat._tcp (add `--service chat`), _http._tcp`: what a browse that found
    /// nothing saw instead, in the words of `send`'s not-found sentence; "" when nothing.
    package static func sentence(_ types: [String]) -> String {
        guard !types.isEmpty else { return "" }
        let named = types.prefix(shown).map { type in
            PeerSearchReport.shortName(type).map { "\(type) (add `\(Spelling.option(.service, $0))`)" } ?? type
        }
        return "; on the link: " + named.joined(separator: ", ") + (types.count > shown ? " and \(types.count - shown) more" : "")
    }
}
