// swift-tools-version:5.9
// Tested by bindings/swift/test.sh (Swift 6.0 from Debian, in a chroot where the build
// machine has no Swift of its own; see the README).
import PackageDescription

let package = Package(
    name: "Mcpc",
    products: [
        .library(name: "Mcpc", targets: ["Mcpc"]),
    ],
    targets: [
        // The C library, found through pkg-config: mcpc.pc is installed by
        // `cmake --install` (see the README); set PKG_CONFIG_PATH for a non-system prefix.
        .systemLibrary(name: "CMcpc", pkgConfig: "mcpc"),
        // A thin async wrapper: task cancellation cancels the call.
        .target(name: "Mcpc", dependencies: ["CMcpc"]),
        // Against the project's test server (MCPC_TEST_SERVER).
        .testTarget(name: "McpcTests", dependencies: ["Mcpc", "CMcpc"]),
    ]
)
