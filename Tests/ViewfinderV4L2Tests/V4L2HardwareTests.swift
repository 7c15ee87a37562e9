import Dispatch
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Tests against a real camera. They run only when `/dev` has a V4L2 node that captures video with
/// streaming I/O; otherwise they are skipped and say so (a CI machine or a container has none).
enum RealCamera {
    /// Capture devices found in `/dev` through libv4l2, probed once.
    static let backends: [any DeviceBackend] = {
        let found = V4L2DeviceProvider().discoverBackends()
        if found.isEmpty {
            print("note: no V4L2 capture device in /dev: the real-camera tests (V4L2 hardware) are skipped")
        }
        return found
    }()

    static var isPresent: Bool { !backends.isEmpty }
}

// Skipped unless a real capture device exists (see RealCamera; a note is printed when skipped).
@Suite("V4L2 hardware", .enabled(if: RealCamera.isPresent, "no V4L2 capture device in /dev"))
struct V4L2HardwareTests {
    @Test("a real camera lists formats with frame rates")
    func formats() throws {
        let backend = try #require(RealCamera.backends.first)
        #expect(!backend.formats.isEmpty)
        #expect(backend.formats.allSatisfy { !$0.videoSupportedFrameRateRanges.isEmpty })
        #expect(backend.uniqueID.hasPrefix("v4l2:"))
    }

    @Test("a real camera delivers frames to a session")
    func streams() throws {
        let backend = try #require(RealCamera.backends.first)
        let device = DeviceRegistry.shared.device(for: backend)
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(errors.count == 0, "\(String(describing: errors.lastError))")
        #expect(delegate.waitForMoreFrames(3, timeout: 10))
        let times = delegate.frames.map(\.presentationTime)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }
}
