import NearbyBase
/// How many tries an invitation gets and with what, as `InvitationPolicy` decides the other way:
/// pure, tested without sockets (`InvitationDeskTests`). A remembered address is tried first while
/// discovery runs; when it leads nowhere (it failed, or another identity answered there) the
/// invitation is tried again with discovery alone. A record that claims the peer's ID but whose
/// host is not it is passed over for the next (`ClaimedIdentity.swift`), a few times at most.
struct InviteAttempts {
    /// Tries at most, over every reason to try again.
    static let limit = 4

    let query: String
    let timeout: Double
    /// Whether a remembered address may be tried before discovery answers (not again once it failed).
    private(set) var remembering = true
    /// Where the peer was last reached: the first try's only.
    private var known: Dialer.Target?
    /// Why the last record passed over failed: the answer when no other record claims the peer.
    private var passedOver: NearbyError?
    private var tries = 0

    init(query: String, timeout: Double, known: Dialer.Target? = nil) {
        self.query = query
        self.timeout = timeout
        self.known = known
    }

    enum Next {
        case attempt(remembering: Bool, known: Dialer.Target?)
        /// No tries left: the invitation fails with this.
        case fail(NearbyError)
    }

    /// The next try, or why there is none.
    mutating func next() -> Next {
        guard tries < Self.limit else { return .fail(passedOver ?? .invitationTimedOut(peer: query, seconds: timeout)) }
        tries += 1
        defer { known = nil }
        return .attempt(remembering: remembering, known: known)
    }

    /// The try led nowhere, but another may not.
    mutating func retry(_ retry: Dialer.Retry) {
        switch retry {
        case .withoutRemembered: remembering = false
        case let .passedOver(failure): passedOver = failure
        }
    }

    /// What the invitation fails with when a try throws `error`: a peer not found after a record
    /// was passed over is that record's failure.
    func failure(_ error: NearbyError) -> NearbyError {
        if case .peerNotFound = error, let passedOver { return passedOver }
        return error
    }
}
