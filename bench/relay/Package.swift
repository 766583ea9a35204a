// swift-tools-version:6.0
// The least work a SwiftNIO pass-through can do, for bench/run.sh: a TCP relay that does no HTTP work.
// A separate package so that the proxy's own build and `make test` never build it.
import PackageDescription

let package = Package(
    name: "nio-relay",
    dependencies: [
        // The same SwiftNIO as Tollgate's Package.swift.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3")
    ],
    targets: [
        .executableTarget(
            name: "nio-relay",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // As Tollgate's own modules are built (Package.swift): no dynamic exclusivity checks.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        )
    ]
)
