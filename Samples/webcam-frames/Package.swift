// swift-tools-version: 6.0
// An app that wants only a webcam's frames: it depends on the core and the V4L2 products, so it
// builds with their Debian packages alone (Scripts/install-dependencies.sh core v4l2) and links
// no PipeWire, FFmpeg (libavformat, libavcodec), SDL2, libwebsockets or D-Bus.
// Scripts/webcam-frames-check.sh builds it, captures from the plug-in camera and checks its links.
import PackageDescription

let package = Package(
    name: "webcam-frames",
    dependencies: [.package(name: "Viewfinder", path: "../..")],
    targets: [
        .executableTarget(
            name: "webcam-frames",
            dependencies: [
                .product(name: "ViewfinderCore", package: "Viewfinder"),
                .product(name: "ViewfinderV4L2", package: "Viewfinder"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
