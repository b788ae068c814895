extension String {
    /// This text cut on a character boundary to at most `limit` bytes of UTF-8 (display names,
    /// file names, what a peer's offer names): whole characters come off its end until it fits.
    package func cut(toUTF8Bytes limit: Int) -> String {
        var text = self
        while text.utf8.count > limit { text.removeLast() }
        return text
    }
}
