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
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// A photo delegate that records every callback (kind, request ID), the photos and errors, checks
/// that callbacks never overlap and run on the output's queue, and lets tests wait for requests
/// to finish.
package final class PhotoRecorder: CapturePhotoCaptureDelegate, Sendable {
    package enum Kind: Int, Sendable, Comparable {
        case willBegin, willCapture, didCapture, didFinishProcessing, didFinishCapture
        package static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }
    package struct Event: Sendable {
        package let kind: Kind
        package let uniqueID: Int64
        package let error: CaptureError?
        package let onOutputQueue: Bool
    }
    package struct Result: Sendable {
        package let photo: CapturePhoto
        package let error: CaptureError?
    }
    private struct State {
        var events: [Event] = []
        var results: [Int64: [Result]] = [:]
        var inside = false
        var overlapping = false
    }
    private let state = Mutex(State())
    private let finishedSignal = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let blocksFirstPhoto = Atomic<Bool>(false)
    /// Signalled when the first `didFinishProcessingPhoto` blocks (see ``blockFirstPhoto()``).
    package let blocked = DispatchSemaphore(value: 0)
    package static let queueKey = DispatchSpecificKey<Int>()
    package let queueTag = Int.random(in: 1...Int.max)

    /// Marks `output`'s callback queue, so callbacks can tell they run on it.
    package func watch(_ queue: DispatchQueue) { queue.setSpecific(key: Self.queueKey, value: queueTag) }

    private func record(_ kind: Kind, _ id: Int64, _ error: (any Error)?, photo: CapturePhoto? = nil) {
        let onQueue = DispatchQueue.getSpecific(key: Self.queueKey) == queueTag
        state.withLock { state in
            if state.inside { state.overlapping = true }
            state.inside = true
            state.events.append(Event(kind: kind, uniqueID: id, error: error as? CaptureError, onOutputQueue: onQueue))
            if let photo { state.results[id, default: []].append(Result(photo: photo, error: error as? CaptureError)) }
            state.inside = false
        }
        if kind == .didFinishCapture { finishedSignal.signal() }
    }

    package func photoOutput(
        _ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {
        record(.willBegin, resolvedSettings.uniqueID, nil)
    }
    package func photoOutput(
        _ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {
        record(.willCapture, resolvedSettings.uniqueID, nil)
    }
    package func photoOutput(
        _ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {
        record(.didCapture, resolvedSettings.uniqueID, nil)
    }
    package func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?
    ) {
        if blocksFirstPhoto.exchange(false, ordering: .relaxed) {
            blocked.signal()
            gate.wait()
        }
        record(.didFinishProcessing, photo.resolvedSettings.uniqueID, error, photo: photo)
    }

    /// Makes the next `didFinishProcessingPhoto` wait (keeping the output's queue busy) until
    /// ``release()``.
    package func blockFirstPhoto() { blocksFirstPhoto.store(true, ordering: .relaxed) }

    /// Lets a blocked callback go on.
    package func release() { gate.signal() }
    package func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        record(.didFinishCapture, resolvedSettings.uniqueID, error)
    }

    package var events: [Event] { state.withLock { $0.events } }
    package var sawOverlappingCalls: Bool { state.withLock { $0.overlapping } }
    package func results(_ id: Int64) -> [Result] { state.withLock { $0.results[id] ?? [] } }
    package var finishedCount: Int { state.withLock { $0.events.count { $0.kind == .didFinishCapture } } }

    /// Waits for `count` more `didFinishCaptureFor` calls.
    package func waitForFinished(_ count: Int = 1, timeout: Double = 10) -> Bool {
        for _ in 0..<count where finishedSignal.wait(timeout: .now() + timeout) != .success { return false }
        return true
    }

    /// The kinds of callbacks request `id` got, in order.
    package func kinds(_ id: Int64) -> [Kind] { events.filter { $0.uniqueID == id }.map(\.kind) }

    /// The five callbacks once each, in order.
    package static let expectedOrder: [Kind] = [
        .willBegin, .willCapture, .didCapture, .didFinishProcessing, .didFinishCapture,
    ]
}

/// A camera that sends the JPEG frames a test pushes (an MJPEG webcam), on the test's thread.
package final class JPEGFrameCamera: DeviceBackend, @unchecked Sendable {
    // unchecked: the sink is in a Mutex; the rest is immutable.
    package let uniqueID = "test.jpeg-frame-camera"
    package let localizedName = "JPEG Frame Camera"
    package let modelID = "jpeg-frame-camera"
    package let manufacturer = "Viewfinder Tests"
    package let deviceType = CaptureDevice.DeviceType.external
    package let formats: [CaptureDevice.Format]
    package var isConnected: Bool { true }
    private let sink = Mutex<(any DeviceStreamSink)?>(nil)
    package let width: Int
    package let height: Int

    package init(width: Int = 640, height: Int = 480) {
        self.width = width
        self.height = height
        formats = [
            CaptureDevice.Format(
                pixelFormat: .mjpeg, width: width, height: height,
                frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
        ]
    }

    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: any DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        self.sink.withLock { $0 = sink }
        return frameDuration
    }

    package func stopStreaming() { sink.withLock { $0 = nil } }

    /// Sends `jpeg` as frame `sequence`; `false` when not streaming.
    @discardableResult
    package func push(_ jpeg: [UInt8], sequence: UInt64) -> Bool {
        guard let sink = sink.withLock({ $0 }) else { return false }
        let buffer = JPEGBytes.pixelBuffer(holding: Data(jpeg), width: width, height: height)
        sink.deviceDidCapture(
            CapturedFrame(
                buffer: buffer, presentationTime: MediaTime(value: Int64(sequence), timescale: 30),
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: sequence,
                hostArrivalTime: HostClock().now()))
        return true
    }
}

package enum PhotoTestSupport {
    /// A file's bytes without the EXIF APP1 segment that follows SOI.
    package static func withoutEXIF(_ file: [UInt8]) throws -> [UInt8] {
        try #require(file.count > 6 && file[0] == 0xFF && file[1] == 0xD8 && file[2] == 0xFF && file[3] == 0xE1)
        let length = Int(file[4]) << 8 | Int(file[5])
        return Array(file[0..<2]) + file[(4 + length)...]
    }

    /// The test-pattern number in a JPEG file.
    package static func patternNumber(_ file: [UInt8], width: Int, height: Int) throws -> UInt64? {
        let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: .bgra)
        let decoded = try JPEGTestSupport.buffer(.bgra, width, height)
        try decoder.decode(file, into: decoded)
        return TestPattern.readSequenceNumber(from: decoded)
    }

    /// One format of the virtual camera.
    package static func format(_ pixelFormat: PixelFormat, _ width: Int = 640, _ height: Int = 480)
        -> CaptureDevice.Format
    {
        CaptureDevice.Format(
            pixelFormat: pixelFormat, width: width, height: height,
            frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
    }
}
