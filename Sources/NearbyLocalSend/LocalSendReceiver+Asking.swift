import Foundation
import NearbyBase

/// A LocalSend transfer that neither `--auto-accept` nor `--accept-from` takes waits for a person:
/// its `invitation` event names it, and `nearby accept [ID|PEER] [--decline]` from another shell
/// answers it through the node's control socket (`LocalSendControl`). Unanswered, it is declined
/// after `LocalSendReceiver.askFor`; at most `maxAsked` wait at once.
extension LocalSendReceiver {
    package static let askFor: Duration = .seconds(60)
    static let maxAsked = 8

    struct Asked: Sendable {
        var id: String
        var device: LocalSendDevice
        var context: String
    }

    /// A transfer waiting for its answer: registered before its invitation is printed, so an
    /// answer can never come before it is there to take it; the core's one-shot holds an answer
    /// that came before its waiter began to wait, and ends the wait at its deadline or when the
    /// waiting request is cancelled (the sender gone).
    struct Waiting: Sendable {
        var asked: Asked
        let decision = OneShot<Decision>()
        var decided: Decision?
    }

    enum Decision: Sendable {
        case accepted, declined, expired, full
        /// The sender closed its connection while it waited (its request's task was cancelled).
        case withdrawn
    }

    /// What an answer did, for the client that gave it: the event line, or why nothing was answered.
    package enum Answered: Sendable {
        case line(String)
        case failure(NearbyError)
    }

    /// Emits the invitation and waits for its answer (or gives it at once to a client waiting for one).
    func ask(_ asked: Asked) async -> Decision {
        guard asking.count < Self.maxAsked else { return .full }
        let expires = EventEncoder.timestamp(Date().addingTimeInterval(Double(Self.askFor / .seconds(1))))
        if let answerer = answerers.withLock({ $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }) {
            events.emit(Events.Invitation.make(invitation: asked.id, peer: asked.device.ref, context: asked.context, expires: expires, answeredBy: "nearby accept"))
            answerer.answered.settle(decide(asked, accept: answerer.accept))
            return answerer.accept ? .accepted : .declined
        }
        asking.append(Waiting(asked: asked))
        events.emit(Events.Invitation.make(invitation: asked.id, peer: asked.device.ref, context: asked.context, expires: expires, answeredBy: nil))
        // The answer, or the deadline (or the sender gone: this task cancelled), whichever comes first.
        let shot = asking.last?.decision
        let waited = await shot?.wait(until: .now + Self.askFor)
        // An answer given while the wait was ending still counts; none: expired.
        settle(asked.id, .expired)
        let decision = waited ?? asking.first { $0.asked.id == asked.id }?.decided ?? .expired
        asking.removeAll { $0.asked.id == asked.id }
        if decision == .expired, Task.isCancelled {
            // As nearby's own invitations are withdrawn when their connection goes.
            events.emit(Events.Declined.make(invitation: asked.id, peer: asked.device.ref, reason: "withdrawn: the sender closed the connection"))
            return .withdrawn
        }
        if decision == .withdrawn {
            events.emit(Events.Declined.make(invitation: asked.id, peer: asked.device.ref, reason: "withdrawn: the sender cancelled"))
        }
        if decision == .expired {
            events.emit(Events.Declined.make(invitation: asked.id, peer: asked.device.ref, reason: "expired: not answered in time"))
        }
        return decision
    }

    /// The answer of `nearby accept [QUERY] [--decline]`: the waiting transfer QUERY names (its
    /// invitation ID, or the sender's alias or ID prefix), else the oldest; none waiting: the next.
    package func answer(query: String?, accept: Bool, token: Int) async -> Answered {
        let index = asking.firstIndex { entry in
            entry.decided == nil && (query.map { entry.asked.id == $0 || entry.asked.device.matches($0) } ?? true)
        }
        if let index {
            let asked = asking[index].asked
            let line = decide(asked, accept: accept)
            settle(asked.id, accept ? .accepted : .declined)
            return line
        }
        let answered = OneShot<Answered>()
        let refused: Answered? = answerers.withLock { state in
            if state.forgotten.remove(token) != nil { return .failure(.cancelled("waiting for a LocalSend transfer")) }
            guard state.waiting.count < Self.maxAsked else { return .failure(.invalidArgument("too many accept commands wait already")) }
            state.waiting.append((token, accept, answered))
            return nil
        }
        if let refused { return refused }
        return await answered.wait() ?? .failure(.cancelled("waiting for a LocalSend transfer"))
    }

    /// Emits the answer's event and gives it to the client as a line.
    private func decide(_ asked: Asked, accept: Bool) -> Answered {
        let encoder = EventEncoder()
        if accept {
            let event = Events.Accepted.make(invitation: asked.id, peer: asked.device.ref, by: "nearby accept")
            events.emit(event)
            return .line(encoder.line(event))
        }
        let event = Events.Declined.make(invitation: asked.id, peer: asked.device.ref, reason: "declined by nearby accept --decline")
        events.emit(event)
        return .line(encoder.line(event))
    }

    /// The sender at `host` cancelled before it was answered (`cancel` without a session ID).
    func withdraw(from host: String) {
        for entry in asking where entry.decided == nil && entry.asked.device.host == host {
            settle(entry.asked.id, .withdrawn)
        }
    }

    /// Ends the wait of `id` with `decision` (kept for its waiter when it has not begun to wait);
    /// the first decision counts.
    private func settle(_ id: String, _ decision: Decision) {
        guard let index = asking.firstIndex(where: { $0.asked.id == id }), asking[index].decided == nil else { return }
        asking[index].decided = decision
        asking[index].decision.settle(decision)
    }

    /// The client of `token` is gone (Ctrl-C): it no longer waits for the next transfer.
    package nonisolated func forget(_ token: Int) {
        let gone = answerers.withLock { state -> OneShot<Answered>? in
            guard let index = state.waiting.firstIndex(where: { $0.token == token }) else {
                if state.forgotten.count >= 256 { state.forgotten.removeAll() }
                state.forgotten.insert(token)
                return nil
            }
            return state.waiting.remove(at: index).answered
        }
        gone?.settle(.failure(.cancelled("waiting for a LocalSend transfer")))
    }
}

/// `nearby accept` commands waiting for the next transfer, and the tokens of those gone before they waited.
struct Answerers: Sendable {
    var waiting: [(token: Int, accept: Bool, answered: OneShot<LocalSendReceiver.Answered>)] = []
    var forgotten: Set<Int> = []
}
