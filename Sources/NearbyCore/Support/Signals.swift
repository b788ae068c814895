import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM as an async value, so long-running commands can end cleanly (withdraw the
/// advertisement, say goodbye) instead of dying mid-way.
public enum TerminationSignal {
    private static let queue = DispatchQueue(label: "nearby.signals")

    /// Returns the first SIGINT or SIGTERM received from now on.
    public static func next() async -> Int32 {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        for await number in stream { return number }
        return SIGTERM
    }
}
