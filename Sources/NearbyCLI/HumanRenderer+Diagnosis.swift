import NearbyCore
import NearbyBase

/// The words for `browse --types`, `browse --service _http._tcp` and `doctor`: what is on the link
/// and what is wrong with it.
extension HumanRenderer {
    /// The line of a diagnosis kind; nil for any other.
    func diagnosis(_ body: any EventBody) -> String? {
        switch body {
        case let e as Events.ServiceTypeSeen:
            return e.instances > 0
                ? paint(Text.clean(e.type), .bold) + " (\(Self.count(e.instances, "instance")))" : paint("gone", .yellow) + " " + Text.clean(e.type)
        case let e as Events.ServiceSeen:
            return service(e)
        case let e as Events.Check:
            let mark = switch e.status {
            case .ok: paint("ok  ", .green)
            case .warn: paint("WARN", .yellow)
            case .fail: paint("FAIL", .red)
            case .skip: paint("skip", .dim)
            }
            // Never cut: the end of a detail or hint is often the part to act on. On a terminal,
            // wrapped between words under the detail (the time and the mark take 14 columns).
            let name = Text.clean(e.check, limit: 40)
            let detail = Self.wrapped(Text.clean(e.detail, limit: Self.longest), first: 14 + name.count + 2, indent: 14, columns: columns)
            let hint = e.hint.map {
                "\n" + String(repeating: " ", count: 14) + "hint: " + Self.wrapped(Text.clean($0, limit: Self.longest), first: 20, indent: 20, columns: columns)
            } ?? ""
            return "\(mark) \(paint(name, .bold)): \(detail)\(hint)"
        case let e as Events.Summary:
            let verdict = e.fail > 0 ? paint("\(e.fail) failed", .red) : paint("nothing failed", .green)
            return "doctor: \(e.ok) ok, \(e.warn) warnings, \(verdict) (exit \(e.exitStatus))"
        default:
            return nil
        }
    }

    /// Details and hints are shown whole up to this many characters (a bound on what a peer's
    /// words can make of a screen, far above any check's own).
    static let longest = 4000

    /// `text` wrapped between words to `columns` (`TerminalText.wrapped`); nil columns: unchanged.
    static func wrapped(_ text: String, first: Int, indent: Int, columns: Int?) -> String {
        TerminalText.wrapped(text, first: first, indent: indent, columns: columns)
    }

    private func service(_ e: Events.ServiceSeen) -> String {
        let word = switch e.state {
        case "found": paint("found", .green)
        case "lost": paint("lost", .yellow)
        default: paint("updated", .cyan)
        }
        return "\(word) \(paint(Text.clean(e.name), .bold)) (\(Text.clean(e.type)))"
            + Text.location(host: e.host, port: e.port, addresses: e.addresses)
            + Text.pairs(e.txt.values, open: " ", close: "", separator: " ")
    }
}
