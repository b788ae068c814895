import NIOHTTP1

/// The bounds on a request head, for every HTTP server a node runs (LocalSend's HTTPS and the web
/// pages): one field 8 KiB, all of them 16 KiB, at most 64 fields. NIOHTTP1's decoder refuses a
/// head past them before it is buffered.
enum HTTPLimits {
    package static let decoder: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 8 * 1024
        limits.maxHeaderListSize = 16 * 1024
        limits.maxHeaderFieldCount = 64
        return limits
    }()
}
