import NearbyBase
import NIOSSL

// TLS's errors in words (ErrorWords.describe): here, where TLS is, so that the base needs no TLS
// library.
extension NIOSSLError: ErrorInWords {
    package var inWords: String {
        switch self {
        case .uncleanShutdown: "closed without a goodbye"
        case .handshakeFailed: "the TLS handshake failed"
        default: "TLS failed"
        }
    }
}

extension BoringSSLError: ErrorInWords {
    package var inWords: String { "TLS failed" }
}
