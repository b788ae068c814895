import Foundation

extension Duration {
    /// A wait or deadline from the environment (`NEARBY_STREAM_WAIT`, `NEARBY_DNS_LEASE`…): a
    /// positive number of seconds under a million, to the millisecond; nil for anything else.
    package static func seconds(parsing text: String?) -> Duration? {
        guard let text, let seconds = Double(text), seconds > 0, seconds.isFinite, seconds < 1e6 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }
}

/// How a wait ends, in the sentence that announces it: by itself after `--timeout S`, or at Ctrl-C.
package enum WaitEnds {
    /// `for 5 s (Ctrl-C stops sooner)`, or `Ctrl-C to stop` without a limit.
    package static func words(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds > 0 else { return "Ctrl-C to stop" }
        return "for \(seconds == seconds.rounded() && seconds < 1e9 ? String(Int(seconds)) : String(seconds)) s (Ctrl-C stops sooner)"
    }
}
