/// Whether a name a person typed is near one on the link: what people mistype. The same letters
/// and digits with other punctuation, spacing or case ("Bobs Pi", "bob's-pi" for "Bob's Pi"), one
/// name beginning the other, or one or two letters off (a letter missing, extra, wrong, or two
/// swapped) — fewer for short names, so "a" is not near everything.
package enum NearName {
    package static func isNear(_ query: String, _ name: String) -> Bool {
        guard query != name else { return false }
        let asked = query.lowercased(), lowered = name.lowercased()
        if asked == lowered { return true }
        if asked.count >= 2, lowered.hasPrefix(asked) || (lowered.count >= 2 && asked.hasPrefix(lowered)) { return true }
        let a = folded(query), b = folded(name)
        // Nothing but punctuation on one side: only case and prefixes (above) say anything.
        guard !a.isEmpty, !b.isEmpty else { return false }
        if a == b { return true }
        if a.count >= 2, b.starts(with: a) || (b.count >= 2 && a.starts(with: b)) { return true }
        let allowed = edits(forLength: min(a.count, b.count))
        guard allowed > 0, abs(a.count - b.count) <= allowed else { return false }
        return distance(a, b) <= allowed
    }

    /// The letters and digits of `text`, lowercased: what is left when punctuation, spacing and
    /// case are not counted.
    static func folded(_ text: String) -> [Character] {
        text.lowercased().filter { $0.isLetter || $0.isNumber }.map { $0 }
    }

    /// How many letters off still count as near for a name this long: none up to 3 letters, one
    /// up to 6, two beyond.
    static func edits(forLength length: Int) -> Int {
        length <= 3 ? 0 : length <= 6 ? 1 : 2
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit (`sned` → `send`).
    package static func distance(_ a: String, _ b: String) -> Int { distance(Array(a), Array(b)) }

    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { best = min(best, table[i - 2][j - 2] + 1) }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
