import NearbyBase

/// The person on the other side: a phone's `prepare-upload` is answered when its person taps
/// Accept (or Decline), and the official app's sender waits as long as that takes, until the
/// receiver ends the session or the sender cancels (send_provider.dart). nearby waits as long,
/// bounded by `--timeout` when it is given, else by `personsPace`; and says what it waits for.
extension LocalSendSender {
    /// How long a person may take to answer when `--timeout` is not given: the bound every wait has.
    package static let personsPace: Duration = .seconds(3600)

    /// An answer slower than this is a person's: the wait is said (`waiting`, `for: answer`).
    static let sayWaitingAfter: Duration = .milliseconds(500)

    /// `work` (the offer's request), saying once, when it has not ended after `sayWaitingAfter`,
    /// that we wait for `target`'s person, and for how long at most.
    func sayingWaiting<T: Sendable>(for target: LocalSendTarget, limit: Duration, _ work: () async -> T) async -> T {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [events] in
                guard (try? await Task.sleep(for: Self.sayWaitingAfter)) != nil, !Task.isCancelled else { return }
                let seconds = Double(limit / .milliseconds(1)) / 1000
                let bound = limit < Self.personsPace ? "up to \(Self.shown(seconds)) s, --timeout" : "Ctrl-C to stop"
                events.emit(Events.Waiting(
                    for: "answer", service: "localsend", reason: "waiting for \(Self.name(target)) to accept… (\(bound))", peer: target.ref,
                    seconds: seconds))
            }
            let value = await work()
            group.cancelAll()
            return value
        }
    }

    static func shown(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    /// What the device left out of an offer it took (its person unticked them): each said as a
    /// `skipped` event, not a failure (the app marks them skipped and the send finished).
    func sayLeftOut(_ names: [String], by target: LocalSendTarget, took: Int, of offered: Int) {
        for name in names {
            events.emit(Events.Skipped(path: name, reason: "left out by \(Self.name(target)): it took \(took) of \(offered) files"))
        }
    }
}
