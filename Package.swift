// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "nearby",
    platforms: [.macOS(.v14)],
    products: [
        // Its own single-target product, so swift-argument-parser's generate-manual plugin documents it.
        .executable(name: "nearby", targets: ["nearby"]),
        // For Fuzz/ only (its own package, so the normal build never links a fuzz entry point): the
        // modules whose decoders read outside bytes. Nothing else depends on this product.
        .library(
            name: "NearbyFuzzable",
            targets: [
                "NearbyBase", "NearbyDNS", "NearbyIdentity", "NearbyControl", "NearbyDiscovery", "NearbyWire", "NearbyWatch", "NearbyHTTP", "NearbyTransfer",
                "NearbyCore", "NearbyLocalSend", "NearbyWeb",
            ]
        ),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Tests only: property-based checks (hand-written decoders against Foundation's).
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        .executableTarget(
            name: "nearby",
            dependencies: ["NearbyCLI", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]
        ),
        // Benchmarks only (bench/sessions.sh): an echoing node, a pinger, and a raw TCP reference.
        .executableTarget(
            name: "nearby-bench",
            dependencies: [
                "NearbyCore", "NearbyBase", "NearbyIdentity", "NearbyTransfer", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto"),
                // Its BoringSSL (CNIOBoringSSL) is what nearby's TLS encrypts with: `primitives` measures that.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "NearbyCLI",
            dependencies: [
                "NearbyCore", "NearbyBase", "NearbyIdentity", "NearbyControl", "NearbyDiscovery", "NearbyWire", "NearbyTransfer",
                "NearbyLocalSend",
                "NearbyWeb",
                "NearbyWatch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The one HTTP serving layer (LocalSend's HTTPS, the web pages): each connection's requests
        // under one deadline, one body reader; each protocol keeps only its routes.
        .target(
            name: "NearbyHTTP",
            dependencies: [
                "NearbyBase",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // LocalSend (protocol v2): a second protocol beside nearby's own, sharing only the core's
        // events, errors and file handling. HTTP over NIOHTTP1 (already in swift-nio), TLS by NIOSSL.
        .target(
            name: "NearbyLocalSend",
            dependencies: [
                "NearbyControl", "NearbyHTTP", "NearbyBase", "NearbyIdentity", "NearbyDiscovery", "NearbyWire", "NearbyTransfer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Any device with a browser (send-file --web, accept --web): plain HTTP over NIOHTTP1 behind
        // an unguessable token, on the core's admission, budget and receive-to-disk path.
        .target(
            name: "NearbyWeb",
            dependencies: [
                "NearbyHTTP", "CQRencode", "CZlib", "NearbyBase", "NearbyTransfer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // libqrencode's qrencode.h: the QR code of the page's address at a terminal.
        .systemLibrary(name: "CQRencode", providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]),
        // zlib's crc32(): the streamed .zip of a shared directory.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // `nearby watch`: mDNS packets captured (a packet socket, or a pcap file), decoded with
        // NearbyDNS, and the rules that name faults in them (pure machines over decoded packets).
        .target(
            name: "NearbyWatch",
            dependencies: ["NearbyBase", "NearbyDNS"]
        ),
        // The DNS message codec for wide-area DNS-SD (--domain): pure, no sockets.
        .target(
            name: "NearbyDNS",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The layers of the core, each a target so that the compiler refuses a reference upward
        // (docs/architecture.md draws this graph from here): the base, identity, discovery, then
        // the sessions, transfers and node of NearbyCore.
        //
        // The base: errors and their words, budgets and admission, blocking work, one-shot waits and
        // deadlines, the event vocabulary and the sinks that print it.
        .target(
            name: "NearbyBase",
            dependencies: [
                "CMalloc",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Who this node is: its key, its name, the peers it pinned; the files they live in.
        .target(
            name: "NearbyIdentity",
            dependencies: [
                "NearbyBase",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // DNS-SD through dns_sd.h (and wide-area through NearbyDNS): advertising, browsing, resolving.
        .target(
            name: "NearbyDiscovery",
            dependencies: [
                "NearbyBase", "NearbyIdentity", "NearbyDNS", "CDNSSD",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            linkerSettings: [.linkedLibrary("dns_sd", .when(platforms: [.linux]))]
        ),
        // The control socket of every kind of node (nearby's own, LocalSend's): its address, its lock,
        // the run directory that holds them, and the one accept loop with its client cap.
        .target(
            name: "NearbyControl",
            dependencies: [
                "NearbyBase", "NearbyIdentity",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The wire: one peer connection — preamble, TLS, handshake, frames, the link and its channels.
        .target(
            name: "NearbyWire",
            dependencies: [
                "NearbyBase", "NearbyIdentity",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // What runs on a channel: files sent and received, bundles, streams, their pure machines.
        .target(
            name: "NearbyTransfer",
            dependencies: [
                "NearbyBase", "NearbyIdentity", "NearbyWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The node that runs sessions and transfers for its commands, and the doctor's peer probe.
        .target(
            name: "NearbyCore",
            dependencies: [
                "NearbyBase", "NearbyIdentity", "NearbyControl", "NearbyDiscovery", "NearbyWire", "NearbyTransfer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // <malloc.h>: mallopt(3) for the base's memory budget (glibc's header is not in Swift's Glibc module).
        .systemLibrary(name: "CMalloc"),
        // dns_sd.h: Avahi's compatibility layer on Linux, the system's own on macOS.
        // (Not through pkg-config: its -D_REENTRANT is a flag SwiftPM refuses with a warning.)
        .systemLibrary(
            name: "CDNSSD",
            providers: [.apt(["libavahi-compat-libdnssd-dev"])]
        ),
        .testTarget(
            name: "NearbyCoreTests",
            dependencies: [
                "NearbyCore", "NearbyBase", "NearbyIdentity", "NearbyControl", "NearbyDiscovery", "NearbyWire", "NearbyTransfer",
                "NearbyDNS",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "NearbyDNSTests", dependencies: ["NearbyDNS"]),
        .testTarget(
            name: "NearbyWatchTests",
            dependencies: ["NearbyWatch", "NearbyDNS", "NearbyBase", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "NearbyHTTPTests",
            dependencies: [
                "NearbyHTTP", "NearbyCore", "NearbyBase",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "NearbyLocalSendTests",
            dependencies: [
                "NearbyLocalSend", "NearbyCore", "NearbyHTTP", "NearbyBase", "NearbyIdentity", "NearbyTransfer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .testTarget(
            name: "NearbyWebTests",
            dependencies: [
                "NearbyWeb", "NearbyCore", "NearbyBase", "NearbyTransfer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "NearbyCLITests", dependencies: ["NearbyCLI", "NearbyCore", "NearbyBase", "NearbyIdentity", "NearbyDiscovery"]),
    ],
    swiftLanguageModes: [.v6]
)
