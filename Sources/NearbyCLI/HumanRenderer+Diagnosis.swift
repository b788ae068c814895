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
            let hint = e.has("hint") ? "\n" + String(repeating: " ", count: 14) + "hint: " + e.clean("hint") : ""
            return "\(mark) \(paint(e.clean("check"), .bold)): \(e.clean("detail"))\(hint)"
        default:
            let fail = e.int("fail")
            let verdict = fail > 0 ? paint("\(fail) failed", .red) : paint("nothing failed", .green)
            return "doctor: \(e.int("ok")) ok, \(e.int("warn")) warnings, \(verdict) (exit \(e.int("exit_status")))"
        }
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
