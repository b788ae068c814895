/// How a node words an encryption mismatch.
extension Node {
    nonisolated static func mismatch(ours: EncryptionPreference, theirs: EncryptionPreference?, decision: Preamble.Decision) -> NearbyError {
        let other = theirs?.rawValue ?? (decision == .refusedRequired ? "required" : "none")
        return .encryptionMismatch(ours: ours.rawValue, theirs: other)
    }
}
