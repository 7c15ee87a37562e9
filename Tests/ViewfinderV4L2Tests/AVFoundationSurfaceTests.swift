import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2

/// Issue 39: AVFoundation's capture members that work on a Linux camera, checked against the
/// simulated UVC camera's V4L2 controls (the value each control holds after the call), and the
/// object model ported code relies on.
@Suite("AVFoundation's surface: controls, ramps, synchronizer, object model")
struct AVFoundationSurfaceTests {
    @Test("exposure target bias moves the brightness control: 0 its default, ±2 EV its ends")
    func exposureBias() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(device.minExposureTargetBias == -2)
        #expect(device.maxExposureTargetBias == 2)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setExposureTargetBias(2)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.brightness) == 255)
        #expect(device.exposureTargetBias == 2)
        try device.setExposureTargetBias(-1)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.brightness) == 64)
        #expect(abs(device.exposureTargetBias + 1) < 0.05)
        let called = DispatchSemaphore(value: 0)
        device.setExposureTargetBias(0) { _ in called.signal() }
        #expect(called.wait(timeout: .now() + 30) == .success, "the completion handler is called")
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.brightness) == 128)
        let error = try #require(throws: CaptureError.self) { try device.setExposureTargetBias(3) }
        #expect(error.code == .invalidArgument)
    }

    @Test("custom exposure: the duration goes to the exposure control, the ISO to the gain control")
    func customExposureAndISO() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(device.activeFormat.minISO == 100)
        #expect(device.activeFormat.maxISO == 800)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 50), iso: 800)
        #expect(device.exposureMode == .custom)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.exposureAbsolute) == 200, "1/50 s in V4L2's 100 µs")
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.gain) == 255)
        #expect(device.iso == 800)
        try device.setExposureModeCustom(duration: CaptureDevice.currentExposureDuration, iso: 100)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.gain) == 0)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.exposureAbsolute) == 200, "the current duration is kept")
        // A duration beyond the camera's range is clamped to it, as the format's range allows more.
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 1), iso: CaptureDevice.currentISO)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.exposureAbsolute) == 2047)
    }

    @Test("white-balance gains lock the temperature control at the gains' colour temperature")
    func whiteBalanceGains() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(device.isLockingWhiteBalanceWithCustomDeviceGainsSupported)
        for kelvin: Float in [3000, 4500, 6000] {
            let gains = device.deviceWhiteBalanceGains(for: .init(temperature: kelvin, tint: 0))
            #expect(min(gains.redGain, gains.greenGain, gains.blueGain) == 1)
            let back = device.temperatureAndTintValues(for: gains)
            #expect(abs(back.temperature - kelvin) < kelvin * 0.03, "\(kelvin) K came back as \(back.temperature) K")
            #expect(abs(back.tint) < 5)
        }
        let warm = device.deviceWhiteBalanceGains(for: .init(temperature: 3000, tint: 0))
        #expect(warm.blueGain > warm.redGain, "a warm light needs more blue gain")
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setWhiteBalanceModeLocked(
            with: device.deviceWhiteBalanceGains(for: .init(temperature: 3000, tint: 0)))
        #expect(device.whiteBalanceMode == .locked)
        let kelvin = try rig.backend.v4l2Value(of: V4L2ControlID.whiteBalanceTemperature)
        #expect(abs(kelvin - 3000) <= 90, "\(kelvin)")
        #expect(
            abs(device.temperatureAndTintValues(for: device.deviceWhiteBalanceGains).temperature - Float(kelvin)) < 100)
        let error = try #require(throws: CaptureError.self) {
            try device.setWhiteBalanceModeLocked(with: .init(redGain: 0.5, greenGain: 1, blueGain: 1))
        }
        #expect(error.code == .invalidArgument)
    }

    @Test("setTorchModeOn(level:) turns the LED on; without one it is unsupported", arguments: [true, false])
    func torchLevel(hasLED: Bool) throws {
        let rig = try SimulatedRig(hasTorch: hasLED)
        let device = try rig.device
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if hasLED {
            try device.setTorchModeOn(level: 0.5)
            #expect(device.torchMode == .on)
            #expect(device.torchLevel == 1, "UVC LEDs are on or off")
            try device.setTorchMode(.off)
            try device.setTorchModeOn(level: CaptureDevice.maxAvailableTorchLevel)
            #expect(device.isTorchActive)
        } else {
            let error = try #require(throws: CaptureError.self) { try device.setTorchModeOn(level: 1) }
            #expect(error.code == .unsupportedControl)
        }
        let range = try #require(throws: CaptureError.self) { try device.setTorchModeOn(level: 0) }
        #expect(range.code == .invalidArgument)
    }

    @Test("a zoom ramp reaches its factor through increasing steps at the rate asked, after the lock is released")
    func zoomRamp() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let steps = Mutex<[Double]>([])
        let ended = DispatchSemaphore(value: 0)
        // Neither property is in the observable list: both are read again after each step.
        let factors = device.observe(\.videoZoomFactor, options: .new) { _, change in
            if let value = change.newValue { steps.withLock { $0.append(value) } }
        }
        let ramping = device.observe(\.isRampingVideoZoom, options: .new) { _, change in
            if change.newValue == false { ended.signal() }
        }
        try device.lockForConfiguration()
        device.ramp(toVideoZoomFactor: 3, withRate: 4)
        #expect(device.isRampingVideoZoom)
        device.unlockForConfiguration()
        #expect(ended.wait(timeout: .now() + 60) == .success, "the ramp ends")
        factors.invalidate()
        ramping.invalidate()
        #expect(!device.isRampingVideoZoom)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.zoomAbsolute) == 300)
        let seen = steps.withLock { $0 }
        #expect(seen.last == 3)
        #expect(seen == seen.sorted(), "\(seen)")
        // The rate: a factor doubles every 1/rate seconds (checked on the ramp's own arithmetic,
        // not on the clock: the machine may be slow to run the steps).
        #expect(CaptureDevice.zoomRampStep(from: 1, to: 3, rate: 4, elapsed: 0.25) == (2, false))
        #expect(
            abs(CaptureDevice.zoomRampStep(from: 1, to: 3, rate: 4, elapsed: 0.125).factor - 2.0.squareRoot()) < 1e-12)
        #expect(CaptureDevice.zoomRampStep(from: 1, to: 3, rate: 4, elapsed: 1) == (3, true))
        #expect(CaptureDevice.zoomRampStep(from: 4, to: 1, rate: 2, elapsed: 0.5) == (2, false))
        #expect(CaptureDevice.zoomRampStep(from: 4, to: 1, rate: 2, elapsed: 2) == (1, true))
        // A ramp can be cancelled where it is.
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.ramp(toVideoZoomFactor: 1, withRate: 0.01)
        device.cancelVideoZoomRamp()
        #expect(!device.isRampingVideoZoom)
        #expect(throws: CaptureError.self) { try device.rampVideoZoom(to: 9, rate: 1) }
    }

    @Test("observing a property outside the observable list does not trap, and reports its changes")
    func unlistedObservation() throws {
        let rig = try SimulatedRig(hasTorch: true)
        let device = try rig.device
        let seen = Mutex<[CaptureDevice.TorchMode]>([])
        let observation = device.observe(\.torchMode, options: [.initial, .new]) { _, change in
            if let mode = change.newValue { seen.withLock { $0.append(mode) } }
        }
        defer { observation.invalidate() }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setTorchMode(.on)
        try device.setTorchMode(.on)  // no change: no report
        try device.setTorchMode(.off)
        #expect(seen.withLock { $0 } == [.off, .on, .off])
        let active = device.observe(\.isTorchActive) { _, _ in }
        active.invalidate()
    }

    @Test("inputs, outputs, connections and sessions are equal and hashable by identity")
    func identity() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let first = try CaptureDeviceInput(device: camera.device)
        let second = try CaptureDeviceInput(device: camera.device)
        #expect(first == first)
        #expect(first != second)
        #expect(Set<CaptureInput>([first, second, first]).count == 2)
        let outputs: [CaptureOutput] = [CaptureVideoDataOutput(), CapturePhotoOutput()]
        #expect(outputs.firstIndex(of: outputs[1]) == 1)
        let session = CaptureSession()
        #expect(session == session)
        #expect(session != CaptureSession())
        let ports = first.ports(
            for: .video, sourceDeviceType: camera.device.deviceType, sourceDevicePosition: .unspecified)
        #expect(ports.count == 1)
        #expect(
            first.ports(for: .video, sourceDeviceType: .builtInTripleCamera, sourceDevicePosition: .unspecified).isEmpty
        )
        #expect(AuthorizationStatus.authorized == CaptureDevice.AuthorizationStatus.authorized)
        #expect(CaptureDevice.DeviceType.builtInMicrophone == .microphone)
    }

    @Test("a preview layer's connection names the layer; one made by hand feeds it")
    func previewLayerConnection() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: camera.device)
        try session.tryAddInput(input)
        let layer = CaptureVideoPreviewLayer(session: session)
        #expect(layer.connection?.videoPreviewLayer === layer)
        let manual = CaptureVideoPreviewLayer(sessionWithNoConnection: session)
        let connection = CaptureConnection(inputPort: try #require(input.ports.first), videoPreviewLayer: manual)
        #expect(connection.videoPreviewLayer === manual)
        #expect(CaptureVideoDataOutput().connection(with: .video)?.videoPreviewLayer == nil)
    }

    @Test("the data output synchronizer hands over both outputs' frames with equal timestamps")
    func synchronizer() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock))
        let session = CaptureSession()
        try session.tryAddInput(CaptureDeviceInput(device: camera.device))
        let outputs = [CaptureVideoDataOutput(), CaptureVideoDataOutput()]
        for output in outputs { try session.tryAddOutput(output) }
        let synchronizer = CaptureDataOutputSynchronizer(dataOutputs: outputs)
        let collector = SynchronizedCollector()
        synchronizer.setDelegate(collector, queue: collector.queue)
        #expect(synchronizer.delegate === collector)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        for _ in 0..<4 {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping())
            for output in outputs { #expect(output.waitUntilDelivered(timeout: 30)) }
        }
        session.stopRunning()
        collector.queue.sync {}
        let matched = collector.matches
        #expect(matched.count >= 3, "\(matched.count) matches of 4 frames")
        for match in matched {
            #expect(match.count == 2)
            #expect(match.times[0] == match.times[1])
        }
        #expect(Set(matched.map(\.times[0])).count == matched.count, "each match is another frame")
    }

    @Test("features no Linux camera has answer as AVFoundation does without them")
    func unsupportedAnswers() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(!device.isVirtualDevice)
        #expect(device.constituentDevices.isEmpty)
        #expect(device.primaryConstituentDeviceSwitchingBehavior == .unsupported)
        #expect(!device.isCenterStageActive)
        #expect(!device.activeFormat.isCenterStageSupported)
        #expect(device.activeDepthDataFormat == nil)
        #expect(device.activeFormat.supportedDepthDataFormats.isEmpty)
        #expect(device.smartFramingMonitor == nil)
        #expect(!device.isSmoothAutoFocusSupported)
        #expect(!device.isLowLightBoostSupported)
        #expect(device.activeFormat.supportedMaxPhotoDimensions == [device.activeFormat.dimensions])
        let photo = CapturePhotoOutput()
        #expect(photo.availableRawPhotoPixelFormatTypes.isEmpty)
        #expect(!photo.isLivePhotoCaptureSupported)
        #expect(!photo.isDepthDataDeliverySupported)
        #expect(photo.captureReadiness == .sessionNotRunning)
        photo.isHighResolutionCaptureEnabled = true
        #expect(photo.isHighResolutionCaptureEnabled)
        let settings = CapturePhotoSettings()
        settings.isHighResolutionPhotoEnabled = true
        #expect(settings.isHighResolutionPhotoEnabled)
        #expect(CapturePhotoSettings(from: settings).uniqueID != settings.uniqueID)
        let raw = CapturePhotoSettings(rawPixelFormatType: 0x6267_3130)
        #expect(raw.formatError?.code == .unsupportedFormat)
        let session = CaptureSession()
        #expect(!session.supportsControls)
        #expect(!session.canAddControl(CaptureSlider("Zoom", symbolName: "plus", in: 1...5)))
        let input = try CaptureDeviceInput(device: device)
        #expect(!input.isCinematicVideoCaptureSupported)
        #expect(input.multichannelAudioMode == .none)
    }
}

/// Collects a synchronizer's matches: the timestamps of each collection's frames.
private final class SynchronizedCollector: CaptureDataOutputSynchronizerDelegate, @unchecked Sendable {
    struct Match: Sendable {
        let count: Int
        let times: [MediaTime]
    }
    let queue = DispatchQueue(label: "test.synchronizer")
    private let state = Mutex<[Match]>([])
    var matches: [Match] { state.withLock { $0 } }

    func dataOutputSynchronizer(
        _ synchronizer: CaptureDataOutputSynchronizer,
        didOutput synchronizedDataCollection: CaptureSynchronizedDataCollection
    ) {
        let times = synchronizer.dataOutputs.compactMap {
            (synchronizedDataCollection[$0] as? CaptureSynchronizedSampleBufferData)?.sampleBuffer.presentationTimeStamp
        }
        state.withLock { $0.append(Match(count: synchronizedDataCollection.count, times: times)) }
    }
}

@Suite("AVFoundation's surface: outputs no Linux camera can feed")
struct AVFoundationUnavailableOutputTests {
    @Test("a depth output is refused as on a device without depth; a preview layer's orientation is its connection's")
    func depthAndPreview() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let session = CaptureSession()
        try session.tryAddInput(CaptureDeviceInput(device: camera.device))
        let depth = CaptureDepthDataOutput()
        #expect(!session.canAddOutput(depth))
        let error = try #require(throws: CaptureError.self) { try session.tryAddOutput(depth) }
        #expect(error.code == .cannotAddOutput)
        let layer = CaptureVideoPreviewLayer(session: session)
        #expect(!layer.isPreviewing)
        layer.isMirrored = true
        #expect(layer.connection?.isVideoMirrored == true)
        layer.orientation = .portrait
        #expect(layer.connection?.videoRotationAngle == 90)
        let port = try #require(session.inputs.first?.ports.first)
        #expect(port.formatDescription == camera.device.activeFormat.formatDescription)
        let still = CaptureStillImageOutput()
        #expect(still.maxBracketedCaptureStillImageCount == 0)
    }
}
