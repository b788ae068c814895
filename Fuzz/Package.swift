// swift-tools-version:6.0
// Coverage-guided fuzz targets (libFuzzer) for nearby's decoders of outside bytes. A package of its
// own, so that the main package's `swift build --build-tests` neither builds nor links a fuzz entry
// point. Build and run through scripts/fuzz (docs/fuzzing.md); it passes -sanitize=fuzzer,address.
import PackageDescription

let package = Package(
    name: "nearby-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "nearby", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // One binary, every target in it (NEARBY_FUZZ_TARGET picks one): a single link of the whole
        // graph under ASan instead of one per target. libFuzzer's driver runs it (Entry.swift).
        .executableTarget(
            name: "nearby-fuzz",
            dependencies: [
                .product(name: "NearbyFuzzable", package: "nearby"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                "CFuzzerDriver",
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .systemLibrary(name: "CFuzzerDriver"),
    ],
    swiftLanguageModes: [.v6]
)
