/// The words for `browse --types`, `browse --service _http._tcp` and `doctor`: what is on the link
/// and what is wrong with it.
extension HumanRenderer {
    func diagnosis(_ e: Fields) -> String {
        switch e.string("event") {
        case "type":
            let n = e.int("instances")
            return n > 0 ? paint(e.clean("type"), .bold) + " (\(Self.count(n, "instance")))" : paint("gone", .yellow) + " " + e.clean("type")
        case "service":
            return service(e)
        case "check":
            let mark = switch e.string("status") {
            case "ok": paint("ok  ", .green)
            case "warn": paint("WARN", .yellow)
            default: paint("FAIL", .red)
            }
            // Never cut: the end of a detail or hint is often the part to act on. On a terminal,
            // wrapped between words under the detail (the time and the mark take 14 columns).
            let name = e.clean("check", limit: 40)
            let detail = Self.wrapped(e.clean("detail", limit: Self.longest), first: 14 + name.count + 2, indent: 14, columns: columns)
            let hint = e.has("hint")
                ? "\n" + String(repeating: " ", count: 14) + "hint: " + Self.wrapped(e.clean("hint", limit: Self.longest), first: 20, indent: 20, columns: columns)
                : ""
            return "\(mark) \(paint(name, .bold)): \(detail)\(hint)"
        default:
            let fail = e.int("fail")
            let verdict = fail > 0 ? paint("\(fail) failed", .red) : paint("nothing failed", .green)
            return "doctor: \(e.int("ok")) ok, \(e.int("warn")) warnings, \(verdict) (exit \(e.int("exit_status")))"
        }
    }

    /// Details and hints are shown whole up to this many characters (a bound on what a peer's
    /// words can make of a screen, far above any check's own).
    static let longest = 4000

    /// `text` broken into lines of at most `columns - 1` characters between words, the first
    /// starting at column `first`, the others indented to `indent`. A word longer than a line is
    /// left whole (a path or an address is never split). nil columns: unchanged.
    static func wrapped(_ text: String, first: Int, indent: Int, columns: Int?) -> String {
        guard let columns else { return text }
        let width = max(columns - 1, indent + 20)
        var lines: [String] = []
        var line = ""
        var used = first
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let length = word.unicodeScalars.count
            if !line.isEmpty, used + 1 + length > width {
                lines.append(line)
                line = String(word)
                used = indent + length
            } else {
                if !line.isEmpty { line += " "; used += 1 }
                line += word
                used += length
            }
        }
        lines.append(line)
        return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
    }

    private func service(_ e: Fields) -> String {
        let state = e.string("state")
        let word = switch state {
        case "found": paint("found", .green)
        case "lost": paint("lost", .yellow)
        default: paint("updated", .cyan)
        }
        var line = "\(word) \(paint(e.clean("name"), .bold)) (\(e.clean("type")))" + location(e)
        if let txt = e.object["txt"] as? [String: Any], !txt.isEmpty {
            line += " " + txt.keys.sorted().prefix(8).map { key in
                Fields.cleaned(key) + "=" + Fields.cleaned(String(describing: txt[key] ?? "").prefix(60).description)
            }.joined(separator: " ")
        }
        return line
    }
}
