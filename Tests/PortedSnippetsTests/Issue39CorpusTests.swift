// Issue 39's porting corpus: three classes written (for this project) in the patterns public iOS
// capture code uses — a manual-exposure camera controller, a recorder with pause and resume, and
// an ML frame grabber on a data output synchronizer — with "AV" deleted and nothing else changed
// (Swift 5 mode, as apps are). They run on the simulated webcam and the virtual camera.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderTesting

// MARK: A manual-exposure camera

/// The controls a "pro camera" screen drives: exposure bias, ISO and shutter sliders, a white
/// balance temperature slider, torch level and a smooth zoom.
final class ManualExposureCameraController: NSObject {
    let session = CaptureSession()
    private(set) var device: CaptureDevice!
    private var observations: [NSKeyValueObservation] = []
    private(set) var isoReadings: [Float] = []
    let sessionQueue = DispatchQueue(label: "manual.session")

    func configure() throws {
        session.beginConfiguration()
        session.sessionPreset = .high
        guard let device = CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back) else {
            throw CaptureError(.deviceNotFound, "no camera")
        }
        self.device = device
        let input = try CaptureDeviceInput(device: device)
        if session.canAddInput(input) { session.addInput(input) }
        session.commitConfiguration()
        observations.append(
            device.observe(\.iso, options: [.new]) { [weak self] _, change in
                if let iso = change.newValue { self?.isoReadings.append(iso) }
            })
    }

    /// The exposure-bias slider: -2 … +2 EV.
    func setBias(_ value: Float) {
        do {
            try device.lockForConfiguration()
            let bias = max(device.minExposureTargetBias, min(value, device.maxExposureTargetBias))
            device.setExposureTargetBias(bias, completionHandler: nil)
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }

    /// The ISO and shutter sliders (0 … 1 each), as manual camera apps map them.
    func setISOAndShutter(isoSlider: Float, shutterSlider: Double, done: @escaping (MediaTime) -> Void) {
        let format = device.activeFormat
        let iso = format.minISO + isoSlider * (format.maxISO - format.minISO)
        let minSeconds = max(MediaTimeGetSeconds(format.minExposureDuration), 1.0 / 1000)
        let maxSeconds = MediaTimeGetSeconds(format.maxExposureDuration)
        let seconds = minSeconds + shutterSlider * (maxSeconds - minSeconds)
        let duration = MediaTimeMakeWithSeconds(seconds, preferredTimescale: 1_000_000)
        do {
            try device.lockForConfiguration()
            device.setExposureModeCustom(duration: duration, iso: iso, completionHandler: done)
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }

    /// The temperature slider, with the gains normalized into the device's range.
    func setTemperature(_ kelvin: Float) {
        guard device.isLockingWhiteBalanceWithCustomDeviceGainsSupported else { return }
        let values = CaptureDevice.WhiteBalanceTemperatureAndTintValues(temperature: kelvin, tint: 0)
        var gains = device.deviceWhiteBalanceGains(for: values)
        let maxGain = device.maxWhiteBalanceGain
        gains.redGain = max(1.0, min(gains.redGain, maxGain))
        gains.greenGain = max(1.0, min(gains.greenGain, maxGain))
        gains.blueGain = max(1.0, min(gains.blueGain, maxGain))
        do {
            try device.lockForConfiguration()
            device.setWhiteBalanceModeLocked(with: gains, completionHandler: nil)
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }

    /// Pinch-to-zoom's smooth variant.
    func zoom(to factor: CGFloat) {
        do {
            try device.lockForConfiguration()
            let clamped = max(device.minAvailableVideoZoomFactor, min(factor, device.maxAvailableVideoZoomFactor))
            device.ramp(toVideoZoomFactor: clamped, withRate: 8)
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }

    /// Low-light and smooth focus, set only where supported, as apps guard them.
    func applyPreferences() {
        do {
            try device.lockForConfiguration()
            if device.isLowLightBoostSupported { device.automaticallyEnablesLowLightBoostWhenAvailable = true }
            if device.isSmoothAutoFocusSupported { device.isSmoothAutoFocusEnabled = true }
            if device.isFocusModeSupported(.continuousAutoFocus) { device.focusMode = .continuousAutoFocus }
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }
}

// MARK: A recorder with pause

/// A clip recorder with a pause button: the movie output's own pause, and the writer settings a
/// recorder logs for its asset writer variant.
final class PausableClipRecorder: NSObject, CaptureFileOutputRecordingDelegate {
    let session = CaptureSession()
    let movieOutput = CaptureMovieFileOutput()
    let videoDataOutput = CaptureVideoDataOutput()
    private(set) var events: [String] = []
    let finished = DispatchSemaphore(value: 0)

    func configure() throws {
        session.beginConfiguration()
        let camera = CaptureDevice.default(for: .video)!
        let input = try CaptureDeviceInput(device: camera)
        if session.canAddInput(input) { session.addInput(input) }
        if session.canAddOutput(movieOutput) { session.addOutput(movieOutput) }
        if session.canAddOutput(videoDataOutput) { session.addOutput(videoDataOutput) }
        session.commitConfiguration()
    }

    var writerSettings: [String: Any]? { videoDataOutput.recommendedVideoSettingsForAssetWriter(writingTo: .mov) }

    func togglePause() {
        if movieOutput.isRecordingPaused {
            movieOutput.resumeRecording()
        } else {
            movieOutput.pauseRecording()
        }
    }

    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.append("started")
    }

    func fileOutput(
        _ output: CaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.append("paused")
    }

    func fileOutput(
        _ output: CaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.append("resumed")
    }

    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: Error?
    ) {
        events.append(error == nil ? "finished" : "failed")
        finished.signal()
    }
}

// MARK: An ML frame grabber on a synchronizer

/// Frames for a model: two data outputs (one scaled for the model), matched by a synchronizer,
/// each match handed over as a pair of pixel buffers.
final class SynchronizedFrameGrabber: NSObject, CaptureDataOutputSynchronizerDelegate {
    let session = CaptureSession()
    let fullOutput = CaptureVideoDataOutput()
    let modelOutput = CaptureVideoDataOutput()
    var synchronizer: CaptureDataOutputSynchronizer?
    let dataOutputQueue = DispatchQueue(label: "grabber.data")
    private(set) var pairs: [(full: (Int, Int), model: (Int, Int), time: MediaTime)] = []

    func configure() throws {
        session.beginConfiguration()
        let camera = CaptureDevice.default(for: .video)!
        let input = try CaptureDeviceInput(device: camera)
        guard session.canAddInput(input) else { return }
        session.addInput(input)
        fullOutput.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        fullOutput.alwaysDiscardsLateVideoFrames = true
        modelOutput.videoSettings = [
            kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA,
            kCVPixelBufferWidthKey as String: 160,
            kCVPixelBufferHeightKey as String: 120,
        ]
        for output in [fullOutput, modelOutput] where session.canAddOutput(output) { session.addOutput(output) }
        session.commitConfiguration()
        synchronizer = CaptureDataOutputSynchronizer(dataOutputs: [fullOutput, modelOutput])
        synchronizer!.setDelegate(self, queue: dataOutputQueue)
    }

    func dataOutputSynchronizer(
        _ synchronizer: CaptureDataOutputSynchronizer,
        didOutput synchronizedDataCollection: CaptureSynchronizedDataCollection
    ) {
        guard
            let syncedFull = synchronizedDataCollection.synchronizedData(for: fullOutput)
                as? CaptureSynchronizedSampleBufferData,
            let syncedModel = synchronizedDataCollection[modelOutput] as? CaptureSynchronizedSampleBufferData
        else { return }
        if syncedFull.sampleBufferWasDropped || syncedModel.sampleBufferWasDropped { return }
        guard let full = SampleBufferGetImageBuffer(syncedFull.sampleBuffer),
            let small = SampleBufferGetImageBuffer(syncedModel.sampleBuffer)
        else { return }
        pairs.append(
            (
                (PixelBufferGetWidth(full), PixelBufferGetHeight(full)),
                (PixelBufferGetWidth(small), PixelBufferGetHeight(small)), syncedFull.timestamp
            ))
    }
}

@Suite("Issue 39 corpus: manual exposure, pausable recorder, synchronized ML frames", .serialized)
struct Issue39CorpusTests {
    @Test("the manual-exposure controller moves the webcam's brightness, gain, exposure and temperature")
    func manualExposure() throws {
        try withSimulatedWebcam {
            let controller = ManualExposureCameraController()
            try controller.configure()
            let device = try #require(controller.device)
            controller.applyPreferences()
            controller.setBias(1)
            #expect(device.exposureTargetBias > 0.9)
            let applied = DispatchSemaphore(value: 0)
            controller.setISOAndShutter(isoSlider: 1, shutterSlider: 0.1) { _ in applied.signal() }
            #expect(applied.wait(timeout: .now() + 30) == .success)
            #expect(device.exposureMode == .custom)
            #expect(device.iso == device.activeFormat.maxISO)
            #expect(controller.isoReadings.last == device.activeFormat.maxISO, "iso is observable")
            controller.setTemperature(3200)
            #expect(device.whiteBalanceMode == .locked)
            #expect(abs((device.whiteBalanceTemperature ?? 0) - 3200) < 150)
        }
    }

    @Test("the pausable recorder pauses and resumes one recording, and reports writer settings")
    func pausableRecorder() throws {
        let clock = ManualClock()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("issue39-pause-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recorder = PausableClipRecorder()
        try withVirtualCameraAndMicrophone(clock: clock) {
            try recorder.configure()
            let settings = try #require(recorder.writerSettings)
            #expect(settings[VideoWidthKey] as? Int == 640)
            recorder.session.startRunning()
            #expect(clock.waitUntilSleeping())
            recorder.movieOutput.startRecording(
                to: folder.appendingPathComponent("clip.mov"), recordingDelegate: recorder)
            func tick(_ count: Int) {
                for _ in 0..<count {
                    clock.advance(by: MediaTime(value: 1, timescale: 30))
                    #expect(clock.waitUntilSleeping())
                    #expect(recorder.movieOutput.waitUntilIdle(timeout: 30))
                }
            }
            tick(5)
            recorder.togglePause()
            tick(5)
            recorder.togglePause()
            tick(5)
            recorder.movieOutput.stopRecording()
            #expect(recorder.finished.wait(timeout: .now() + 30) == .success)
            recorder.session.stopRunning()
        }
        #expect(recorder.events == ["started", "paused", "resumed", "finished"])
    }

    @Test("the frame grabber gets matched full-size and model-size frames")
    func synchronizedGrabber() throws {
        let clock = ManualClock()
        try withVirtualCameraAndMicrophone(clock: clock) {
            let grabber = SynchronizedFrameGrabber()
            try grabber.configure()
            grabber.session.startRunning()
            #expect(clock.waitUntilSleeping())
            for _ in 0..<4 {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                #expect(clock.waitUntilSleeping())
                #expect(grabber.fullOutput.waitUntilDelivered(timeout: 30))
                #expect(grabber.modelOutput.waitUntilDelivered(timeout: 30))
            }
            grabber.session.stopRunning()
            grabber.dataOutputQueue.sync {}
            #expect(grabber.pairs.count >= 3)
            for pair in grabber.pairs {
                #expect(pair.full == (640, 480))
                #expect(pair.model == (160, 120))
            }
        }
    }
}
