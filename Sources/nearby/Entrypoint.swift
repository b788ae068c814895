import NIOCore
import NIOPosix
import NearbyCLI

/// The executable is only this: all behaviour lives in NearbyCLI and NearbyCore.
@main
enum Entrypoint {
    static func main() async {
        // Swift concurrency runs on NIO's event loops: a task that awaits a socket write or is
        // woken by a frame no longer hops between two thread pools (measured in bench/).
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await Nearby.start()
    }
}
