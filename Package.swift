// swift-tools-version: 6.0
import PackageDescription

// Shared settings for every Swift target (modelled on hummingbird's Package.swift).
//
// Release builds skip the runtime's exclusivity checks: they were 2.5 % of a cache hit's CPU
// (docs/performance.md, session 6). Debug builds, which run the tests, keep them.
// Release builds also make every function of our modules available to the modules that use
// them (cross-module optimization): HeaderFields, HTTPURL and the cache's value types get
// inlined and specialized in the session and the proxy (per 1 KiB hit 15 retains and 4 mallocs
// fewer; docs/performance.md, session 9). Unsafe flags mean SwiftPM refuses this package as a
// *versioned* dependency of another package (a branch, revision or local path still works).
let releaseFlags = ["-enforce-exclusivity=unchecked", "-cross-module-optimization"]
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .unsafeFlags(releaseFlags, .when(configuration: .release)),
]
// The modules a request passes through, which own no C resource, are also built without
// lexical lifetimes in release: an object may be released after its last use rather than at
// the end of its variable's scope, which lets the optimizer drop retain/release pairs (per
// 1 KiB hit 260 → 236 retains, user CPU −6 %). Code that hands an object's C pointer to C
// (TollgateTLS: X509, SSL; TollgateStore: LMDB transactions) keeps lexical lifetimes, and none
// of these modules relies on a deinit running at the end of a scope. `make test` runs the suite
// a second time built as a release build (`make test-release`): the code is tested as it ships.
let requestPathSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .unsafeFlags(releaseFlags + ["-Xfrontend", "-enable-lexical-lifetimes=false"], .when(configuration: .release)),
]

let nio: [Target.Dependency] = [
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "NIOHTTP1", package: "swift-nio"),
    .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
]

let package = Package(
    name: "tollgate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tollgate", targets: ["tollgate"]),
        .library(name: "TollgateSession", targets: ["TollgateSession"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // C system libraries and the shims for what Swift cannot import (function-like macros).
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMalloc"),
        // zlib inflates the deflated files of a Go module zip, to check go.sum's hashes (warm).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlienc", providers: [.apt(["libbrotli-dev"])]),

        .target(name: "TollgateStore", dependencies: ["CLMDB"], swiftSettings: swiftSettings),
        // OpenSSL initialized at program load without its atexit cleanup (see the C file).
        .target(name: "COpenSSLProcess", dependencies: ["COpenSSL"]),
        .target(name: "TollgateTLS", dependencies: ["COpenSSL", "COpenSSLProcess"] + nio, swiftSettings: swiftSettings),
        .target(name: "TollgateHTTP", swiftSettings: requestPathSettings),
        // The thread-local state of TollgateLoop: Swift has no thread-local variables.
        .target(name: "CTollgateLoop"),
        // Event-loop plumbing below the session and the proxy: the per-event clock, loop deadlines,
        // received-bytes buffers.
        .target(
            name: "TollgateLoop",
            dependencies: ["CTollgateLoop", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: requestPathSettings
        ),
        .target(
            name: "TollgateCache",
            dependencies: [
                "TollgateHTTP", "TollgateStore", "COpenSSL", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ],
            swiftSettings: requestPathSettings
        ),
        .target(
            name: "TollgateSession",
            dependencies: [
                "TollgateHTTP", "TollgateCache", "TollgateStore", "TollgateTLS", "TollgateLoop", "CZlib",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
                + nio,
            swiftSettings: requestPathSettings
        ),
        .target(
            name: "TollgatePolicy",
            dependencies: [
                "TollgateSession", "TollgateHTTP", "TollgateCache", "TollgateTLS",
                .product(name: "Yams", package: "Yams"), .product(name: "Logging", package: "swift-log"),
            ] + nio,
            swiftSettings: requestPathSettings
        ),
        .target(
            name: "TollgateProxy",
            dependencies: [
                "TollgatePolicy", "TollgateSession", "TollgateHTTP", "TollgateCache", "TollgateTLS", "TollgateLoop", "TollgateStore",
                "CMalloc", "CZlib", "CBrotli",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ] + nio,
            swiftSettings: requestPathSettings
        ),
        .executableTarget(
            name: "tollgate",
            dependencies: [
                "TollgateProxy", "TollgatePolicy", "TollgateSession", "TollgateCache", "TollgateTLS", "TollgateHTTP", "CZlib",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ] + nio,
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TollgateTesting",
            dependencies: ["TollgateHTTP", "TollgateTLS"] + nio,
            swiftSettings: swiftSettings
        ),

        .testTarget(name: "TollgateStoreTests", dependencies: ["TollgateStore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "TollgateTLSTests",
            dependencies: ["TollgateTLS", "TollgateTesting", .product(name: "NIOEmbedded", package: "swift-nio")] + nio,
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TollgateLoopTests",
            dependencies: ["TollgateLoop", "TollgateTesting"] + nio,
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "TollgateHTTPTests", dependencies: ["TollgateHTTP"], swiftSettings: swiftSettings),
        .testTarget(
            name: "TollgateCacheTests",
            dependencies: [
                "TollgateCache", "TollgateStore", "TollgateHTTP", "TollgateTesting", .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TollgateSessionTests",
            dependencies: [
                "TollgateSession", "TollgateTesting", "TollgateHTTP", "TollgateTLS", "TollgateCache",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ] + nio,
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TollgatePolicyTests",
            dependencies: [
                "TollgatePolicy", "TollgateSession", "TollgateHTTP", "TollgateCache", "TollgateTLS", "TollgateTesting",
                .product(name: "Logging", package: "swift-log"),
            ] + nio,
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TollgateProxyTests",
            dependencies: [
                "TollgateProxy", "TollgatePolicy", "TollgateSession", "TollgateTesting", "TollgateHTTP", "TollgateTLS", "TollgateCache",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ] + nio,
            swiftSettings: swiftSettings
        ),
    ]
)

// Fuzz targets (issue #32, docs/operations.md "Fuzzing"): only when TOLLGATE_FUZZ=1, which
// `make fuzz` sets, so `swift build`, `make test` and `make release` never see them. Why here
// rather than in a package of their own under Fuzz/: the parsers are internal to their modules
// (RequestDecoder, ResponseDecoder, the cache's record decoder …), and only a root package's targets
// are built with `-enable-testing` in debug and can reach them with `@testable import` without
// widening any module's API; a separate package could see only this package's two products.
// Each target is an executable whose main.swift defines `LLVMFuzzerTestOneInput` and an `@main`
// that runs libFuzzer's driver (FuzzSupport's runLibFuzzer); `make fuzz` builds them with
// `-sanitize=fuzzer,address -parse-as-library` into .build-fuzz.
if Context.environment["TOLLGATE_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzRequestDecoder", ["TollgateProxy", "TollgateHTTP"] + nio),
        ("FuzzResponseDecoder", ["TollgateSession", "TollgateHTTP"] + nio),
        ("FuzzCacheControl", ["TollgateHTTP"]),
        ("FuzzHTTPDate", ["TollgateHTTP"]),
        ("FuzzEntityTag", ["TollgateHTTP"]),
        ("FuzzURL", ["TollgateHTTP"]),
        ("FuzzCanonicalHost", ["TollgateProxy"]),
        ("FuzzCookie", ["TollgateSession", "TollgateHTTP"]),
        ("FuzzDigestChallenge", ["TollgateSession", "TollgateHTTP"]),
        ("FuzzStoredEntry", ["TollgateCache", "TollgateHTTP"]),
        ("FuzzManifest", ["TollgateCache"]),
        ("FuzzPolicyLoader", ["TollgatePolicy"]),
        ("FuzzTLSHandler", ["TollgateTLS", .product(name: "NIOEmbedded", package: "swift-nio")] + nio),
        ("FuzzHTTP2RequestMapping", ["TollgateProxy", "TollgateHTTP"]),
    ]
    package.targets += [
        .target(name: "CLibFuzzer", path: "Fuzz/Sources/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], path: "Fuzz/Sources/FuzzSupport"),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name,
                dependencies: ["FuzzSupport"] + target.dependencies,
                path: "Fuzz/Sources/\(target.name)",
                swiftSettings: swiftSettings
            )
        )
    }
}
