import NearbyCLI

/// The executable is only this: all behaviour lives in NearbyCLI and NearbyCore.
@main
enum Entrypoint {
    static func main() async {
        await Nearby.main()
    }
}
