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

// AVCam-style delegates with plain mutable state, as AVFoundation code writes them, in Swift 6
// language mode (this target's): they compile because no delegate protocol requires `Sendable`,
// and they work because each output calls its delegate on one serial queue.

/// AVCam's photo processor, renamed only: mutable state, no locks.
private final class PhotoCaptureProcessor: NSObject, CapturePhotoCaptureDelegate {
    private(set) var photoData: Data?
    private(set) var calls: [String] = []
    private let completionHandler: (PhotoCaptureProcessor) -> Void

    init(completionHandler: @escaping (PhotoCaptureProcessor) -> Void) {
        self.completionHandler = completionHandler
    }

    func photoOutput(
        _ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {
        calls.append("willBegin")
    }

    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        calls.append("didFinishProcessing")
        if error == nil { photoData = photo.fileDataRepresentation() }
    }

    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        calls.append("didFinishCapture")
        completionHandler(self)
    }
}

/// An audio meter with a counter and a running peak, no locks.
private final class AudioMeter: CaptureAudioDataOutputSampleBufferDelegate {
    var buffers = 0
    var samples = 0
    var lastSequence: UInt64?
    var inOrder = true

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        buffers += 1
        samples += sampleBuffer.numSamples
        if let last = lastSequence, sampleBuffer.sequenceNumber <= last { inOrder = false }
        lastSequence = sampleBuffer.sequenceNumber
    }
}

@Suite("Delegates with mutable state (Swift 6 mode)")
struct NonSendableDelegateTests {
    @Test("an AVCam-style PhotoCaptureProcessor keeps its photo data in a plain var")
    func photoProcessor() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(clock: clock, formats: [PhotoTestSupport.format(.nv12VideoRange)]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let photos = CapturePhotoOutput()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(photos)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        let finished = DispatchSemaphore(value: 0)
        var processors: [PhotoCaptureProcessor] = []  // kept alive until they finish, as AVCam does
        let processor = PhotoCaptureProcessor { _ in finished.signal() }
        processors.append(processor)
        photos.capturePhoto(with: CapturePhotoSettings(), delegate: processor)
        clock.advance(by: .fps(30))
        #expect(clock.waitUntilSleeping())
        #expect(finished.wait(timeout: .now() + 10) == .success)
        session.stopRunning()
        // didFinishCapture has returned: the processor's state is settled.
        #expect(processor.calls == ["willBegin", "didFinishProcessing", "didFinishCapture"])
        let data = try #require(processor.photoData)
        #expect(data.starts(with: [0xFF, 0xD8]), "a JPEG")
        processors.removeAll()
    }

    @Test("an audio meter counts buffers and samples in plain vars, every buffer once, in order")
    func audioMeter() throws {
        let clock = ManualClock(start: MediaTime(seconds: 1))
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [format]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let output = CaptureAudioDataOutput()
        let meter = AudioMeter()
        let queue = DispatchQueue(label: "meter")
        output.setSampleBufferDelegate(meter, queue: queue)
        try session.tryAddInput(try CaptureDeviceInput(device: mic.makeDevice()))
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        for _ in 0..<20 {
            clock.advance(by: .audioChunk)
            #expect(clock.waitUntilSleeping())
            #expect(output.waitUntilDelivered(timeout: 10))
        }
        session.stopRunning()
        let (buffers, samples, inOrder) = queue.sync { (meter.buffers, meter.samples, meter.inOrder) }
        let statistics = output.statistics
        #expect(buffers == statistics.delivered)
        #expect(buffers >= 20, "\(statistics)")
        #expect(samples == buffers * 480, "10 ms buffers at 48 kHz")
        #expect(inOrder)
        #expect(statistics.delivered + statistics.dropped == statistics.captured)
    }
}
