// swift-tools-version:5.9
// NOT YET TESTED: Swift cannot be installed on the machine this project is built and tested on.
// The C module map it relies on is checked there with clang (packaging/tests/module_test.sh).
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
    ]
)
