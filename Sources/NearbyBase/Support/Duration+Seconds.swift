import Foundation

extension Duration {
    /// A wait or deadline from the environment (`NEARBY_STREAM_WAIT`, `NEARBY_DNS_LEASE`…): a
    /// positive number of seconds under a million, to the millisecond; nil for anything else.
    package static func seconds(parsing text: String?) -> Duration? {
        guard let text, let seconds = Double(text), seconds > 0, seconds.isFinite, seconds < 1e6 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }
}
