import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// One frame interval of the C920 at 30 fps.
package let thirtyFPS = MediaTime(value: 1, timescale: 30)

/// A bus with one simulated C920-like camera on a manual clock.
package struct SimulatedRig {
    package let clock = ManualClock()
    package let bus: SimulatedV4L2Bus
    package let camera: SimulatedUVCCamera

    package init(
        listing: String = SimulatedUVCCamera.c920Listing, emulatesRawFormats: Bool = false, hasTorch: Bool = false,
        bytesPerLineAlignment: Int = 1, bufferCount: Int = 4
    ) throws {
        bus = SimulatedV4L2Bus(bufferCount: bufferCount)
        camera = try SimulatedUVCCamera(
            configuration: .init(
                listing: listing, busInfo: "usb-test-\(UUID().uuidString.prefix(8))", clock: clock,
                emulatesRawFormats: emulatesRawFormats, hasTorch: hasTorch,
                bytesPerLineAlignment: bytesPerLineAlignment))
        bus.plug(camera)
    }

    package var device: CaptureDevice {
        get throws { try #require(bus.device(for: camera)) }
    }

    package var backend: V4L2CameraBackend {
        get throws { try #require(try device.backend as? V4L2CameraBackend) }
    }

    package func format(_ pixelFormat: PixelFormat, _ width: Int, _ height: Int) throws -> CaptureDevice.Format {
        try #require(
            try device.formats.first {
                $0.pixelFormat == pixelFormat && $0.dimensions == .init(width: width, height: height)
            })
    }
}

/// A stream sink that records frames (metadata only, so buffers go back at once unless kept).
package final class RecordingSink: DeviceStreamSink, @unchecked Sendable {  // unchecked: state is in a Mutex.
    package struct Frame {
        package var sequenceNumber: UInt64
        package var presentationTime: MediaTime
        package var patternNumber: UInt64?
        package var dataSize: Int
        package var address: UInt
    }
    private let frames = Mutex<[Frame]>([])
    private let kept = Mutex<[PixelBuffer]>([])
    private let failures = Mutex<[CaptureError]>([])
    package let frameArrived = DispatchSemaphore(value: 0)
    package let failed = DispatchSemaphore(value: 0)
    package let keepsBuffers: Bool

    package init(keepsBuffers: Bool = false) { self.keepsBuffers = keepsBuffers }

    package func deviceDidCapture(_ frame: CapturedFrame) {
        let record = Frame(
            sequenceNumber: frame.sequenceNumber, presentationTime: frame.presentationTime,
            patternNumber: TestPattern.readSequenceNumber(from: frame.buffer), dataSize: frame.buffer.dataSize,
            address: UInt(bitPattern: frame.buffer.baseAddress))
        frames.withLock { $0.append(record) }
        if keepsBuffers { kept.withLock { $0.append(frame.buffer) } }
        frameArrived.signal()
    }

    package func deviceDidFail(_ error: CaptureError) {
        failures.withLock { $0.append(error) }
        failed.signal()
    }

    package var recorded: [Frame] { frames.withLock { $0 } }
    package var errors: [CaptureError] { failures.withLock { $0 } }
    package func releaseKept() { kept.withLock { $0.removeAll() } }

    /// Waits for `count` more frames; false on timeout.
    package func waitForFrames(_ count: Int = 1, timeout: Double = 10) -> Bool {
        (0..<count).allSatisfy { _ in frameArrived.wait(timeout: .now() + timeout) == .success }
    }
}

/// A running session: the rig's camera into one video data output with `delegate`.
package func makeSession(
    device: CaptureDevice, delegate: RecordingDelegate, settings: VideoSettings = VideoSettings(),
    preset: CaptureSession.Preset = .low, discardsLate: Bool = true
) throws -> (CaptureSession, CaptureVideoDataOutput) {
    let session = CaptureSession()
    session.beginConfiguration()
    session.sessionPreset = preset
    try session.tryAddInput(try CaptureDeviceInput(device: device))
    let output = CaptureVideoDataOutput()
    output.typedVideoSettings = settings
    output.alwaysDiscardsLateVideoFrames = discardsLate
    output.setSampleBufferDelegate(delegate, queue: delegate.queue)
    try session.tryAddOutput(output)
    session.commitConfiguration()
    return (session, output)
}
