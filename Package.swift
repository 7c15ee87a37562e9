// swift-tools-version: 6.0
import PackageDescription

/// The library's modules (the umbrella `Viewfinder` re-exports them all): the tests reach into each.
let modules: [Target.Dependency] = [
    "ViewfinderCore", "ViewfinderV4L2", "ViewfinderPipeWire", "ViewfinderALSA", "ViewfinderMovie",
    "ViewfinderWebPreview", "ViewfinderPreviewWindow", "ViewfinderTesting", "ViewfinderMetadata",
]

/// What every test target of a module depends on.
let testDependencies: [Target.Dependency] = ["Viewfinder", "ViewfinderSimulator", "ViewfinderTestSupport"] + modules

let package = Package(
    name: "Viewfinder",
    products: [
        // Everything, with the built-in backends registered: what `import Viewfinder` code expects.
        .library(name: "Viewfinder", targets: ["Viewfinder"]),
        // The core: sessions, devices and the provider API, the output framework, the video and
        // audio data outputs, the photo output, the preview layer, processing, conversion and
        // JPEG (libyuv, libswscale, libswresample, libturbojpeg, libjpeg, libexif).
        .library(name: "ViewfinderCore", targets: ["ViewfinderCore"]),
        // Cameras through V4L2 (libv4l2).
        .library(name: "ViewfinderV4L2", targets: ["ViewfinderV4L2"]),
        // Cameras through PipeWire, the Camera portal and the virtual-camera output (libpipewire,
        // libdbus; V4L2 cameras route through PipeWire when a daemon offers them).
        .library(name: "ViewfinderPipeWire", targets: ["ViewfinderPipeWire"]),
        // Microphones through ALSA (alsa-lib).
        .library(name: "ViewfinderALSA", targets: ["ViewfinderALSA"]),
        // Movie recording, file replay (FFmpeg's libavformat and libavcodec).
        .library(name: "ViewfinderMovie", targets: ["ViewfinderMovie"]),
        // The preview page in a browser (libwebsockets).
        .library(name: "ViewfinderWebPreview", targets: ["ViewfinderWebPreview"]),
        // The preview window (SDL2).
        .library(name: "ViewfinderPreviewWindow", targets: ["ViewfinderPreviewWindow"]),
        // The virtual test-pattern camera and virtual microphone (opt-in devices, no system library).
        .library(name: "ViewfinderTesting", targets: ["ViewfinderTesting"]),
        // The metadata output: QR codes and barcodes found in video frames (ZXing-cpp).
        .library(name: "ViewfinderMetadata", targets: ["ViewfinderMetadata"]),
        // Test doubles (a simulated UVC camera and V4L2 bus): add to test targets only.
        .library(name: "ViewfinderSimulator", targets: ["ViewfinderSimulator"]),
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
        // libswscale (conversions libyuv has no kernel for) with libavutil's pixel formats.
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
        // libjpeg-turbo's libjpeg API (libjpeg62-turbo): MJPEG frames decoded one iMCU row at a
        // time (jpeg_read_raw_data), each converted while in cache.
        .target(
            name: "CJPEG",
            linkerSettings: [.linkedLibrary("jpeg")]
        ),
        .target(
            name: "CExif",
            linkerSettings: [.linkedLibrary("exif")]
        ),
        // FFmpeg (libavformat, libavcodec, libavutil; recording and file replay): the AVERROR
        // macros, av_err2str, AVFrame's plane arrays and a counting file sink.
        .target(
            name: "CFFmpeg",
            linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]
        ),
        // alsa-lib (microphones): plug-in and configuration calls use alloca macros and a
        // variadic error handler, so they sit behind a few C functions.
        .target(
            name: "CALSA",
            linkerSettings: [.linkedLibrary("asound")]
        ),
        // libswresample (audio format, rate and channel conversion).
        .target(
            name: "CSwresample",
            linkerSettings: [.linkedLibrary("swresample"), .linkedLibrary("avutil")]
        ),
        // glibc's CPU-affinity calls (GNU extensions the Glibc module leaves out): band threads
        // are placed on another CPU than the thread that wakes them.
        .target(name: "CThreads"),
        // SDL2 (libsdl2 from Debian): the preview layer's window (PreviewWindow).
        .target(
            name: "CSDL2",
            linkerSettings: [.linkedLibrary("SDL2")]
        ),
        // libwebsockets 4.1 (the preview page's HTTP and WebSocket server): its callback protocol
        // and lws_write's LWS_PRE headroom behind a few plain functions.
        .target(
            name: "CWebSockets",
            linkerSettings: [.linkedLibrary("websockets")]
        ),
        // PipeWire (libpipewire-0.3, libspa 0.2; cameras shared between programs, the Camera
        // portal's remote, the virtual camera output): the SPA pod builders, pw_thread_loop and
        // pw_stream behind plain C. The headers' directories come from pkg-config through the
        // CPipeWireSystem system-library module (as libdbus's do through CDBusSystem).
        .systemLibrary(name: "CPipeWireSystem", pkgConfig: "libpipewire-0.3"),
        // SwiftPM drops pkg-config's -D_REENTRANT (with a "prohibited flag" warning): defined here.
        .target(name: "CPipeWire", dependencies: ["CPipeWireSystem"], cSettings: [.define("_REENTRANT")]),
        // libdbus (Debian's libdbus-1) for the Camera portal: its headers come from pkg-config (one of
        // them lives under the multiarch /usr/lib/<triple>/dbus-1.0/include), so a system-library
        // module carries the flags and the CDBus shim keeps libdbus out of Swift.
        .systemLibrary(name: "CDBusSystem", pkgConfig: "dbus-1"),
        .target(name: "CDBus", dependencies: ["CDBusSystem"]),
        // ZXing-cpp 1.4 (Debian's libzxing-dev; QR codes and barcodes for the metadata output): a
        // C++ library, behind one extern "C" function, so Swift needs no C++ interoperability.
        // Its headers are in the default include path; the library is linked by name.
        .target(
            name: "CZXing",
            linkerSettings: [.linkedLibrary("ZXing")]
        ),
        // Links the umbrella's load-time hook: the core calls it once before its device registry is used.
        .target(name: "CViewfinderHooks"),
        .target(name: "CViewfinderUmbrella", dependencies: ["CViewfinderHooks"]),
        .target(
            name: "ViewfinderCore",
            dependencies: ["CSwscale", "CYUV", "CSwresample", "CTurboJPEG", "CExif", "CJPEG", "CThreads", "CViewfinderHooks"]
        ),
        .target(name: "ViewfinderV4L2", dependencies: ["ViewfinderCore", "CV4L2", "CSwscale"]),
        .target(name: "ViewfinderPipeWire", dependencies: ["ViewfinderCore", "ViewfinderV4L2", "CPipeWire", "CDBus"]),
        .target(name: "ViewfinderALSA", dependencies: ["ViewfinderCore", "CALSA"]),
        .target(name: "ViewfinderMovie", dependencies: ["ViewfinderCore", "CFFmpeg", "CSwscale", "CSwresample"]),
        .target(name: "ViewfinderWebPreview", dependencies: ["ViewfinderCore", "CWebSockets"]),
        .target(name: "ViewfinderPreviewWindow", dependencies: ["ViewfinderCore", "CSDL2"]),
        .target(name: "ViewfinderTesting", dependencies: ["ViewfinderCore"]),
        .target(name: "ViewfinderMetadata", dependencies: ["ViewfinderCore", "CZXing", "CTurboJPEG"]),
        .target(
            name: "Viewfinder",
            dependencies: [
                "ViewfinderCore", "ViewfinderV4L2", "ViewfinderPipeWire", "ViewfinderALSA", "ViewfinderMovie",
                "ViewfinderWebPreview", "ViewfinderPreviewWindow", "ViewfinderTesting", "ViewfinderMetadata",
                "CViewfinderUmbrella",
            ]
        ),
        // The simulated V4L2 driver, for tests and demos; applications that do not depend on it
        // do not compile it in.
        .target(
            name: "ViewfinderSimulator",
            dependencies: ["Viewfinder", "CV4L2"]
        ),
        .executableTarget(
            name: "viewfinder-demo",
            dependencies: ["Viewfinder", "ViewfinderSimulator"],
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
        // libv4lconvert's MJPEG emulation as a contender in the mjpeg/ rows (bench only; the
        // library reaches libv4lconvert through libv4l2).
        .target(
            name: "CV4LConvert",
            path: "Benchmarks/CV4LConvert",
            linkerSettings: [.linkedLibrary("v4lconvert")]
        ),
        .executableTarget(
            name: "viewfinder-bench",
            dependencies: [
                "Viewfinder", "ViewfinderMetadata", "CSwscale", "CSwresample", "CFFmpeg", "CYUV", "CTurboJPEG",
                "CAllocCounter", "CV4LConvert", "CV4L2",
            ],
            path: "Benchmarks/viewfinder-bench"
        ),
        // Test helper: a PipeWire test camera node, and a second Viewfinder process capturing
        // from one (the PipeWire backend's tests).
        .executableTarget(
            name: "viewfinder-pipewire-probe",
            dependencies: ["Viewfinder", "ViewfinderSimulator"],
            path: "Tests/viewfinder-pipewire-probe"
        ),
        // Test helper: records until killed (the crash-safety test SIGKILLs it).
        .executableTarget(
            name: "viewfinder-record-probe",
            dependencies: ["Viewfinder"],
            path: "Tests/viewfinder-record-probe"
        ),
        // Test helper: the V4L2 cameras of a directory as an unprivileged user meets them (the
        // permission test runs it as `nobody` when the tests run as root).
        .executableTarget(
            name: "viewfinder-access-probe",
            dependencies: ["ViewfinderCore", "ViewfinderV4L2"],
            path: "Tests/viewfinder-access-probe"
        ),
        // Issue 14: the inputs that are fuzzed (Scripts/fuzz.sh), the fuzz driver, and the soak run
        // (Scripts/soak.sh).
        .target(
            name: "ViewfinderFuzzing",
            dependencies: ["Viewfinder", "ViewfinderSimulator"],
            path: "Tests/ViewfinderFuzzing"
        ),
        .executableTarget(
            name: "viewfinder-fuzz",
            dependencies: ["ViewfinderFuzzing"],
            path: "Tests/viewfinder-fuzz"
        ),
        .executableTarget(
            name: "viewfinder-soak",
            dependencies: ["Viewfinder"],
            path: "Tests/viewfinder-soak"
        ),
        // What the test targets share: rigs for each module's tests (simulated and plug-in cameras,
        // a private PipeWire daemon's producers, the mock portal, a browser, movie checks).
        .target(
            name: "ViewfinderTestSupport",
            dependencies: ["Viewfinder", "ViewfinderSimulator"] + modules,
            path: "Tests/ViewfinderTestSupport"
        ),
        // Tests per module; the suites that need something started beside them (the libv4l2
        // plug-in camera, a PipeWire daemon, Chromium, an X display) have targets of their own.
        // Scripts/test.sh runs them all in one test binary.
        .testTarget(name: "ViewfinderCoreTests", dependencies: testDependencies + ["ViewfinderFuzzing"]),
        .testTarget(name: "ViewfinderV4L2Tests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderPlugInCameraTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderPipeWireTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderALSATests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderMovieTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderWebPreviewTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderBrowserTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderPreviewWindowTests", dependencies: testDependencies),
        .testTarget(name: "ViewfinderMetadataTests", dependencies: testDependencies),
        // The seeds' AVFoundation snippets after the mechanical rename (AV deleted, CMTime →
        // MediaTime, …), in Swift 5 mode, where most iOS capture code still lives.
        .testTarget(
            name: "PortedSnippetsTests",
            dependencies: ["Viewfinder", "ViewfinderSimulator"] + modules,
            exclude: ["Swift6"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Code written the way another module writes it: `import Viewfinder` only, never
        // @testable. An output on the shared core and a device backend registered by its provider.
        .testTarget(
            name: "PublicExtensionTests",
            dependencies: ["Viewfinder"]
        ),
        // AVCam-style snippets that must compile in Swift 6 mode (delegates with mutable state).
        .testTarget(
            name: "PortedSnippetsSwift6Tests",
            dependencies: ["Viewfinder"],
            path: "Tests/PortedSnippetsTests/Swift6"
        ),
    ],
    swiftLanguageModes: [.v6],
    // ZXing-cpp's headers need C++17 (the CZXing shim is the package's only C++).
    cxxLanguageStandard: .cxx17
)
