// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Viewfinder",
    products: [
        .library(name: "Viewfinder", targets: ["Viewfinder"]),
        .executable(name: "viewfinder-demo", targets: ["viewfinder-demo"]),
        .executable(name: "viewfinder-bench", targets: ["viewfinder-bench"]),
    ],
    targets: [
        // C shims: libv4l2's entry points are variadic and the V4L2 macros are function-like,
        // so Swift reaches them through small prefixed inline functions and constants.
        .target(
            name: "CV4L2",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("v4l2")]
        ),
        .target(
            name: "CSwscale",
            linkerSettings: [.linkedLibrary("swscale"), .linkedLibrary("avutil")]
        ),
        // Debian's libyuv ships no pkg-config file: link it by name.
        .target(
            name: "CYUV",
            linkerSettings: [.linkedLibrary("yuv")]
        ),
        // libjpeg-turbo's TurboJPEG 2.x API (MJPEG decoding, photos) and libexif (photo metadata).
        .target(
            name: "CTurboJPEG",
            linkerSettings: [.linkedLibrary("turbojpeg")]
        ),
        .target(
            name: "CExif",
            linkerSettings: [.linkedLibrary("exif")]
        ),
        .target(
            name: "Viewfinder",
            dependencies: ["CV4L2", "CSwscale", "CYUV", "CTurboJPEG", "CExif"]
        ),
        .executableTarget(
            name: "viewfinder-demo",
            dependencies: ["Viewfinder"],
            path: "Samples/viewfinder-demo"
        ),
        // A frame processor written outside the library: a starting point to copy.
        .executableTarget(
            name: "viewfinder-plugin",
            dependencies: ["Viewfinder"],
            path: "Samples/viewfinder-plugin"
        ),
        // Counts heap allocations for the benchmark runner (replaces malloc; bench only).
        .target(
            name: "CAllocCounter",
            path: "Benchmarks/CAllocCounter"
        ),
        .executableTarget(
            name: "viewfinder-bench",
            dependencies: ["Viewfinder", "CSwscale", "CYUV", "CAllocCounter"],
            path: "Benchmarks/viewfinder-bench"
        ),
        .testTarget(
            name: "ViewfinderTests",
            dependencies: ["Viewfinder"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
