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
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

#if canImport(Glibc)
    import Glibc
#endif

/// A camera that only describes itself (lookups never stream from it).
private final class StubCamera: DeviceBackend {
    let uniqueID: String
    let localizedName: String
    var modelID: String { "stub" }
    var manufacturer: String { "" }
    let deviceType: CaptureDevice.DeviceType
    let position: CaptureDevice.Position
    var formats: [CaptureDevice.Format] { VirtualCamera.standardFormats }
    var isConnected: Bool { true }

    init(_ name: String, _ type: CaptureDevice.DeviceType, _ position: CaptureDevice.Position) {
        uniqueID = "stub:\(name)"
        localizedName = name
        deviceType = type
        self.position = position
    }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        throw CaptureError(.deviceNotFound, "a stub camera does not stream")
    }

    func stopStreaming() {}
}

private struct StubProvider: DeviceProvider {
    let backends: [any DeviceBackend]
    var sortOrder: Int { 0 }
    func discoverBackends() -> [any DeviceBackend] { backends }
}

@Suite("Device types, positions and lookups")
struct DeviceLookupTests {
    /// A sysfs tree with `video0` on a USB device whose `removable` reads `value` (none if nil).
    private func sysfs(removable value: String?) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sysfs-\(UUID().uuidString)").path
        let usbDevice = "\(root)/devices/pci0000:00/0000:00:14.0/usb1/1-5"
        let interface = "\(usbDevice)/1-5:1.0"
        try FileManager.default.createDirectory(atPath: interface, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: "\(root)/class/video4linux/video0", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: "\(root)/class/video4linux/video0/device", withDestinationPath: interface)
        if let value { try "\(value)\n".write(toFile: "\(usbDevice)/removable", atomically: true, encoding: .utf8) }
        return root
    }

    @Test(
        "sysfs' removable attribute of the camera's USB device gives its type and position",
        arguments: [
            (
                "fixed", V4L2PortKind.fixed, CaptureDevice.DeviceType.builtInWideAngleCamera,
                CaptureDevice.Position.front
            ),
            ("removable", .removable, .external, .unspecified),
            ("unknown", .unknown, .external, .unspecified),
            (nil, .unknown, .external, .unspecified),
        ] as [(String?, V4L2PortKind, CaptureDevice.DeviceType, CaptureDevice.Position)])
    func sysfsClassification(
        value: String?, kind: V4L2PortKind, type: CaptureDevice.DeviceType, position: CaptureDevice.Position
    ) throws {
        let root = try sysfs(removable: value)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let found = V4L2Sysfs(root: root).portKind(ofNode: "/dev/video0")
        #expect(found == kind)
        let (foundType, foundPosition) = found.classify(busInfo: "usb-0000:00:14.0-5")
        #expect(foundType == type && foundPosition == position)
        #expect(V4L2Sysfs(root: root).portKind(ofNode: "/dev/video7") == .unknown)
        // The real device directory asks its sysfs, which the provider passes to each camera.
        #expect(V4L2DevDirectory(path: root, sysfs: V4L2Sysfs(root: root)).portKind(ofNode: "/dev/video0") == kind)
    }

    @Test("a camera on a non-USB bus is built in, facing unknown")
    func platformCamera() {
        let (type, position) = V4L2PortKind.unknown.classify(busInfo: "platform:bcm2835-isp")
        #expect(type == .builtInWideAngleCamera && position == .unspecified)
    }

    @Test("exact matches first; a built-in wide-angle lookup no camera matches gets the default camera")
    func lookupRule() {
        let laptop = StubCamera("Integrated Camera", .builtInWideAngleCamera, .front)
        let webcam = StubCamera("C920", .external, .unspecified)
        let registry = DeviceRegistry(providers: [StubProvider(backends: [webcam, laptop]), VirtualCameraProvider()])
        DeviceRegistry.$current.withValue(registry) {
            #expect(
                CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)?.localizedName
                    == "Integrated Camera")
            #expect(
                CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .unspecified)?.localizedName
                    == "Integrated Camera")
            // No back camera: iOS code's lookup gets the default camera (the first real one).
            let back = CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)
            #expect(back?.localizedName == "C920")
            #expect(back?.deviceType == .external)  // and it says what it really is
            #expect(CaptureDevice.default(.external, for: .video, position: .unspecified)?.localizedName == "C920")
            #expect(CaptureDevice.default(.external, for: .video, position: .front) == nil)
            #expect(CaptureDevice.default(.builtInDualCamera, for: .video, position: .back) == nil)
            #expect(CaptureDevice.default(.builtInWideAngleCamera, for: .audio, position: .back) == nil)
            let both = CaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified)
            #expect(both.devices.map(\.localizedName) == ["C920", "Integrated Camera"])
            let rear = CaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .back)
            #expect(rear.devices.map(\.localizedName) == ["C920"])
            let triple = CaptureDevice.DiscoverySession(
                deviceTypes: [.builtInTripleCamera, .builtInTrueDepthCamera], mediaType: .video, position: .front)
            #expect(triple.devices.isEmpty)
            #expect(CaptureDevice.devices().count == 3)
        }
    }

    @Test("on a machine whose only camera is the virtual one, iOS lookups get it for every position")
    func virtualOnly() {
        let registry = DeviceRegistry(providers: [VirtualCameraProvider()])
        DeviceRegistry.$current.withValue(registry) {
            for position in [CaptureDevice.Position.back, .front, .unspecified] {
                let device = CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: position)
                #expect(device?.deviceType == .virtual)
                #expect(device?.position == .unspecified)
            }
            #expect(CaptureDevice.default(.external, for: .video, position: .unspecified) == nil)
        }
    }
}

@Suite("Authorization from the device nodes")
struct AuthorizationTests {
    @Test(
        "authorized when a node opens, denied with the group hint on EACCES, restricted on EPERM",
        arguments: [
            (nil, CaptureDevice.AuthorizationStatus.authorized),
            (EACCES, .denied),
            (EPERM, .restricted),
        ] as [(Int32?, CaptureDevice.AuthorizationStatus)])
    func fromNodes(openError: Int32?, expected: CaptureDevice.AuthorizationStatus) async throws {
        let bus = SimulatedV4L2Bus()
        let camera = try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing))
        bus.plug(camera)
        camera.setOpenError(openError)
        let (status, error, granted) = await DeviceRegistry.$current.withValue(bus.registry) {
            let status = CaptureDevice.authorizationStatus(for: .video)
            let error = CaptureDevice.authorizationError(for: .video)
            let granted = await withCheckedContinuation { continuation in
                CaptureDevice.requestAccess(for: .video) { continuation.resume(returning: $0) }
            }
            return (status, error, granted)
        }
        #expect(status == expected)
        #expect(granted == (expected == .authorized))
        #expect((error == nil) == (expected == .authorized))
        if expected == .denied {
            #expect(error?.code == .permissionDenied)
            #expect(error?.message.contains("'video' group") == true)
        }
    }

    @Test("only virtual devices: authorized, never notDetermined")
    func virtualOnly() async {
        let registry = DeviceRegistry(providers: [VirtualCameraProvider()])
        let status = DeviceRegistry.$current.withValue(registry) { CaptureDevice.authorizationStatus(for: .video) }
        #expect(status == .authorized)
        let audio = DeviceRegistry.$current.withValue(registry) { CaptureDevice.authorizationStatus(for: .audio) }
        #expect(audio == .authorized)
        let granted = await DeviceRegistry.$current.withValue(registry) {
            await CaptureDevice.requestAccess(for: .video)
        }
        #expect(granted)
    }
}

@Suite("AVFoundation spellings: settings, orientation, errors, notifications")
struct PortingSpellingTests {
    @Test("videoSettings' dictionary form: literal, NSNumber, size, nil, throwing init, subscript")
    func videoSettingsDictionary() throws {
        let bgra: VideoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        #expect(bgra.pixelFormat == .bgra && bgra.size == nil)
        let nv12: VideoSettings = [
            kCVPixelBufferPixelFormatTypeKey: NSNumber(value: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
            kCVPixelBufferWidthKey: 320, kCVPixelBufferHeightKey: 240,
        ]
        #expect(nv12.pixelFormat == .nv12FullRange && nv12.width == 320 && nv12.height == 240)
        #expect(nv12[kCVPixelBufferPixelFormatTypeKey] as? OSType == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
        #expect(nv12[kCVPixelBufferWidthKey] as? Int == 320)
        let native: VideoSettings = nil
        #expect(native.isEmpty)
        let dictionary: [String: Any] = [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        ]
        #expect(try VideoSettings(dictionary).pixelFormat == .nv12VideoRange)
        #expect(throws: CaptureError.self) { try VideoSettings(["AVVideoCodecKey": "jpeg"]) }
        #expect(throws: CaptureError.self) { try VideoSettings([kCVPixelBufferPixelFormatTypeKey: "BGRA"]) }
        #expect(throws: CaptureError.self) { try VideoSettings([kCVPixelBufferWidthKey: 640]) }

        let output = CaptureVideoDataOutput()
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        #expect(output.typedVideoSettings.pixelFormat == .bgra)
        output.videoSettings = nil
        #expect(output.typedVideoSettings.isEmpty)
    }

    @Test("orientation maps to rotation as iOS does for a landscape sensor")
    func orientation() throws {
        typealias Orientation = CaptureVideoOrientation
        #expect(Orientation.landscapeRight.rotationAngle == 0)
        #expect(Orientation.portrait.rotationAngle == 90)
        #expect(Orientation.landscapeLeft.rotationAngle == 180)
        #expect(Orientation.portraitUpsideDown.rotationAngle == 270)
        for orientation in Orientation.allCases {
            #expect(Orientation(rotationAngle: orientation.rotationAngle) == orientation)
        }
        #expect(Orientation.portrait.rawValue == 1 && Orientation.landscapeLeft.rawValue == 4)

        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.bgra)), delegate: delegate)
        let connection = try #require(rig.output.connection(with: .video))
        #expect(connection.isVideoOrientationSupported)
        #expect(connection.videoOrientation == .landscapeRight)
        connection.videoOrientation = .portrait
        #expect(connection.videoRotationAngle == 90)
        #expect(!connection.isVideoRotationAngleSupported(45))
        rig.start()
        rig.step(clock, by: .fps(60))
        #expect(delegate.frames.last?.width == 480 && delegate.frames.last?.height == 640)
        connection.videoRotationAngle = 180
        #expect(connection.videoOrientation == .landscapeLeft)
        rig.step(clock, by: .fps(60))
        #expect(delegate.frames.last?.width == 640)
        #expect(!connection.isVideoStabilizationSupported)
        connection.preferredVideoStabilizationMode = .standard
        #expect(connection.activeVideoStabilizationMode == .off)
        rig.session.stopRunning()
    }

    @Test("AVError code names are the codes they stand for; setter misuse traps, device failures post")
    func errorCodes() {
        #expect(CaptureError.Code.deviceWasDisconnected == .deviceDisconnected)
        #expect(CaptureError.Code.deviceNotConnected == .deviceNotFound)
        #expect(CaptureError.Code.deviceInUseByAnotherApplication == .deviceBusy)
        #expect(CaptureError.Code.applicationIsNotAuthorizedToUseDevice == .permissionDenied)
        let error: any Error = CaptureError(.deviceDisconnected, "unplugged")
        #expect((error as? CaptureError)?.code == .deviceWasDisconnected)
        #expect(CaptureDevice.disposition(of: CaptureError(.configurationNotLocked, "")) == .trap)
        #expect(CaptureDevice.disposition(of: CaptureError(.unsupportedControl, "")) == .trap)
        #expect(CaptureDevice.disposition(of: CaptureError(.invalidArgument, "")) == .trap)
        #expect(CaptureDevice.disposition(of: CaptureError(.ioError, "")) == .post)
        #expect(CaptureDevice.disposition(of: CaptureError(.deviceDisconnected, "")) == .post)
    }

    @Test("notification names under AVFoundation's spellings are the same names")
    func notificationNames() {
        #expect(Notification.Name.CaptureSessionRuntimeError == CaptureSession.runtimeErrorNotification)
        #expect(Notification.Name.CaptureSessionDidStartRunning == CaptureSession.didStartRunningNotification)
        #expect(Notification.Name.CaptureSessionDidStopRunning == CaptureSession.didStopRunningNotification)
        #expect(Notification.Name.CaptureSessionWasInterrupted == CaptureSession.wasInterruptedNotification)
        #expect(Notification.Name.CaptureSessionInterruptionEnded == CaptureSession.interruptionEndedNotification)
        #expect(Notification.Name.CaptureDeviceWasConnected == CaptureDevice.wasConnectedNotification)
        #expect(Notification.Name.CaptureDeviceWasDisconnected == CaptureDevice.wasDisconnectedNotification)
    }

    @Test("settable device properties change the camera under the lock; the honest rest reads false")
    func deviceProperties() throws {
        let bus = SimulatedV4L2Bus()
        bus.plug(try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing)))
        try bus.withDiscovery {
            let device = try #require(CaptureDevice.default(for: .video))
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            if device.isFocusModeSupported(.locked) {
                device.focusMode = .locked
                #expect(device.focusMode == .locked)
            }
            if device.isFocusModeSupported(.continuousAutoFocus) {
                device.focusMode = .continuousAutoFocus
                #expect(device.focusMode == .continuousAutoFocus)
            }
            if device.maxAvailableVideoZoomFactor > 1 {
                device.videoZoomFactor = 2
                #expect(abs(device.videoZoomFactor - 2) < 0.2)
            }
            let format = try #require(
                device.formats.first { $0.dimensions.width == 640 && !$0.pixelFormat.isCompressed })
            device.activeFormat = format
            #expect(device.activeFormat == format)
            let duration = try #require(format.videoSupportedFrameRateRanges.first?.minFrameDuration)
            device.activeVideoMinFrameDuration = duration
            #expect(device.activeVideoMinFrameDuration == duration)
            #expect(device.activeVideoMaxFrameDuration == duration)
            device.focusPointOfInterest = CGPoint(x: 0.25, y: 0.75)
            #expect(device.focusPointOfInterest == CGPoint(x: 0.25, y: 0.75))
            device.isSubjectAreaChangeMonitoringEnabled = true
            #expect(device.isSubjectAreaChangeMonitoringEnabled)
            #expect(!device.isFocusPointOfInterestSupported && !device.isExposurePointOfInterestSupported)
            #expect(!device.hasFlash && !device.isFlashAvailable && device.flashMode == .off)
            #expect(device.isFlashModeSupported(.off) && !device.isFlashModeSupported(.auto))
            #expect(!device.isAdjustingFocus && !device.isAdjustingExposure && !device.isAdjustingWhiteBalance)
            #expect(!device.activeFormat.isVideoStabilizationModeSupported(.standard))
        }
    }
}

@Suite("output.sampleBuffers")
struct SampleBufferSequenceTests {
    @Test("newest wins while the loop body is busy, and every frame is accounted for as with a delegate")
    func newestWins() async throws {
        let clock = ManualClock()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.bgra)), delegate: RecordingDelegate())
        var frames = rig.output.sampleBuffers.makeAsyncIterator()
        let mailbox = try #require(rig.output.sampleBufferDelegate as? SampleBufferMailbox)
        rig.start()
        #expect(clock.waitUntilSleeping())
        #expect(mailbox.holding.wait(timeout: .now() + 10) == .success)
        // Frame 0 is delivered and held by the (not yet pulling) consumer; the next five arrive
        // while it is "busy": only the newest waits, four are replaced as late.
        clock.advance(by: .fps(60) * 5)
        #expect(clock.waitUntilSleeping())
        let first = try #require(await frames.next())
        let newest = try #require(await frames.next())
        #expect(first.sequenceNumber < newest.sequenceNumber)
        let statistics = rig.output.statistics
        #expect(statistics.captured == 6)
        #expect(statistics.droppedLate == 4)
        clock.advance(by: .fps(60))
        let next = try #require(await frames.next())
        #expect(next.sequenceNumber > newest.sequenceNumber)
        rig.session.stopRunning()
        let final = rig.output.statistics
        #expect(final.delivered == 3)
        #expect(final.delivered + final.droppedLate + final.droppedOutOfBuffers + final.rateGated == final.captured)
    }

    @Test("leaving the loop ends delivery to it; cancelling the task ends the sequence")
    func ending() async throws {
        let rig = try Rig(camera: .init(formats: virtualFormats(.bgra)), delegate: RecordingDelegate())
        rig.start()
        var count = 0
        for await frame in rig.output.sampleBuffers {
            #expect(frame.imageBuffer?.pixelFormat == .bgra)
            count += 1
            if count == 3 { break }
        }
        #expect(count == 3)
        let output = rig.output
        let task = Task {
            var seen = 0
            for await _ in output.sampleBuffers { seen += 1 }
            return seen
        }
        task.cancel()
        _ = await task.value  // returns: cancellation ends the sequence
        rig.session.stopRunning()
        #expect(!rig.session.isRunning)
    }
}
