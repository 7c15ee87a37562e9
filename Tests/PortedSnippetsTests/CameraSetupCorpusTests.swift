// More of the porting corpus: a class written (for this project) in the patterns public iOS
// capture code uses when it sets a camera up for a scanning-and-recording screen — the camera
// the user picked last time found again by its unique ID, low-light frame rate where the format
// offers it, focal length in pixels from the format's field of view, the session's hardware cost
// checked, barcodes and faces told apart in the metadata callback, a code's bounds converted to
// the video frames' pixels to crop them, and every interruption reason handled — with "AV"
// deleted and only the README's one-line changes: the interruption observer loses `@objc` (no
// Objective-C runtime on Linux) and reads the reason with `as? CaptureSession.InterruptionReason`
// instead of through `AnyObject`'s `integerValue` (Swift 5 mode, as apps are). It runs on a
// simulated C920.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderSimulator

// MARK: A scanning camera's setup

/// Stands in for the app's preferences store (UserDefaults in the app).
final class CameraPreferences {
    var values: [String: String] = [:]
    func string(forKey key: String) -> String? { values[key] }
    func set(_ value: String, forKey key: String) { values[key] = value }
}

/// Sets up the camera for a screen that scans codes and records: remembers the camera by its
/// unique ID, prefers a steady exposure in dim rooms over a steady rate, and keeps the crop
/// rectangles of the codes it sees in the video frames' pixels (for the app's crop-and-classify
/// step).
final class ScanningCameraSetup: NSObject, CaptureMetadataOutputObjectsDelegate {
    static let cameraKey = "selectedCameraID"

    let session = CaptureSession()
    let videoOutput = CaptureVideoDataOutput()
    let metadataOutput = CaptureMetadataOutput()
    let preferences: CameraPreferences
    private(set) var device: CaptureDevice!
    /// Focal length in pixels at the active format's width, for the app's distance estimate.
    private(set) var focalLengthInPixels: Double?
    private(set) var codeCrops: [(value: String, rect: CGRect)] = []
    private(set) var faceIDs: [Int] = []
    private(set) var log: [String] = []

    init(preferences: CameraPreferences) {
        self.preferences = preferences
    }

    func configure() throws {
        // The camera the user picked last time, else the default one.
        if let savedID = preferences.string(forKey: Self.cameraKey), let saved = CaptureDevice(uniqueID: savedID) {
            device = saved
        } else {
            device = CaptureDevice.default(for: .video)
        }
        guard let device = device else { throw CaptureError(.deviceNotFound, "no camera") }
        preferences.set(device.uniqueID, forKey: Self.cameraKey)

        session.beginConfiguration()
        let input = try CaptureDeviceInput(device: device)
        if session.canAddInput(input) { session.addInput(input) }
        if session.canAddOutput(videoOutput) { session.addOutput(videoOutput) }
        if session.canAddOutput(metadataOutput) { session.addOutput(metadataOutput) }
        session.commitConfiguration()

        // Types can be asked for once the output is connected.
        metadataOutput.setMetadataObjectsDelegate(self, queue: DispatchQueue.main)
        let wanted: [MetadataObject.ObjectType] = [.qr, .ean13, .face]
        metadataOutput.metadataObjectTypes = wanted.filter { metadataOutput.availableMetadataObjectTypes.contains($0) }

        do {
            try device.lockForConfiguration()
            if let format = bestFormat(for: device) { device.activeFormat = format }
            // After the format: a new active format turns automatic frame rate off.
            if device.activeFormat.isAutoVideoFrameRateSupported {
                device.isAutoVideoFrameRateEnabled = true
            }
            device.unlockForConfiguration()
        } catch {
            log.append("could not lock \(device.localizedName): \(error)")
        }

        let fieldOfView = device.activeFormat.videoFieldOfView
        if fieldOfView > 0 {
            let width = Double(VideoFormatDescriptionGetDimensions(device.activeFormat.formatDescription).width)
            focalLengthInPixels = width / (2 * tan(Double(fieldOfView) * .pi / 360))
        } else {
            log.append("field of view unknown")
        }

        if session.hardwareCost > 1.0 {
            log.append("hardware cost \(session.hardwareCost): lowering the preset")
            session.sessionPreset = .vga640x480
        }
    }

    /// The 1280 x 720 format with the highest frame rate.
    func bestFormat(for device: CaptureDevice) -> CaptureDevice.Format? {
        var best: CaptureDevice.Format?
        var bestRate = 0.0
        for format in device.formats {
            let dimensions = VideoFormatDescriptionGetDimensions(format.formatDescription)
            guard dimensions.width == 1280, dimensions.height == 720 else { continue }
            for range in format.videoSupportedFrameRateRanges where range.maxFrameRate > bestRate {
                best = format
                bestRate = range.maxFrameRate
            }
        }
        return best
    }

    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection
    ) {
        for object in metadataObjects {
            switch object {
            case let face as MetadataFaceObject:
                faceIDs.append(face.faceID)
            case let code as MetadataMachineReadableCodeObject:
                guard let value = code.stringValue else { continue }
                let rect = videoOutput.outputRectConverted(fromMetadataOutputRect: code.bounds)
                codeCrops.append((value, rect.integral))
            default:
                break
            }
        }
    }

    func sessionWasInterrupted(notification: Notification) {
        guard
            let reason = notification.userInfo?[CaptureSessionInterruptionReasonKey]
                as? CaptureSession.InterruptionReason
        else { return }
        switch reason {
        case .audioDeviceInUseByAnotherClient, .videoDeviceInUseByAnotherClient:
            log.append("camera in use elsewhere")
        case .videoDeviceNotAvailableWithMultipleForegroundApps, .videoDeviceNotAvailableInBackground:
            log.append("camera unavailable")
        case .videoDeviceNotAvailableDueToSystemPressure:
            log.append("system pressure")
        case .sensitiveContentMitigationActivated:
            log.append("sensitive content")
        default:
            log.append("interrupted (\(reason.rawValue))")
        }
    }
}

// MARK: Running it

@Suite("Porting corpus: a scanning camera's setup", .serialized)
struct CameraSetupCorpusTests {
    @Test("the setup finds the saved camera again, turns on low-light frame rate and knows the focal length")
    func setupOnTheSimulatedC920() throws {
        try withSimulatedC920 { camera in
            let preferences = CameraPreferences()
            let first = ScanningCameraSetup(preferences: preferences)
            try first.configure()
            let device = try #require(first.device)
            #expect(preferences.string(forKey: ScanningCameraSetup.cameraKey) == device.uniqueID)
            #expect(first.metadataOutput.metadataObjectTypes == [.qr, .ean13], "no face detector: faces left out")

            // The next launch finds the same camera by the saved unique ID.
            let second = ScanningCameraSetup(preferences: preferences)
            try second.configure()
            #expect(second.device === device)

            // 720p (16:9) on a C920: 70.4° across, so about 907 pixels of focal length.
            #expect(device.activeFormat.dimensions == .init(width: 1280, height: 720))
            let focal = try #require(first.focalLengthInPixels)
            #expect(abs(focal - 906.9) < 0.5, "\(focal)")
            // The dynamic frame rate control of the camera itself was switched on.
            #expect(device.isAutoVideoFrameRateEnabled)
            #expect(camera.controlValue(0x009a_0903) == 1)  // V4L2_CID_EXPOSURE_AUTO_PRIORITY
            #expect(first.session.hardwareCost <= 1)
            #expect(first.log.isEmpty, "\(first.log)")
        }
    }

    @Test("the metadata callback crops codes in the video frames' pixels and tells faces from codes")
    func metadataCallback() throws {
        try withSimulatedC920 { _ in
            let setup = ScanningCameraSetup(preferences: CameraPreferences())
            try setup.configure()
            let connection = try #require(setup.metadataOutput.connection(with: .video))
            let videoConnection = try #require(setup.videoOutput.connection(with: .video))
            videoConnection.videoRotationAngle = 90
            let code = MetadataMachineReadableCodeObject(
                type: .qr, time: .zero, duration: MediaTime(value: 1, timescale: 30),
                corners: [
                    CGPoint(x: 0.25, y: 0.5), CGPoint(x: 0.5, y: 0.5), CGPoint(x: 0.5, y: 0.75),
                    CGPoint(x: 0.25, y: 0.75),
                ], stringValue: "https://example.org")
            setup.metadataOutput(setup.metadataOutput, didOutput: [code], from: connection)
            // Turned a quarter clockwise, the 1280 x 720 picture is 720 x 1280: (x, y) → (1 - y, x).
            #expect(setup.codeCrops.count == 1)
            #expect(setup.codeCrops.first?.rect == CGRect(x: 180, y: 320, width: 180, height: 320))
            #expect(setup.faceIDs.isEmpty)
        }
    }

    @Test("the interruption handler takes every reason, iOS 26's among them")
    func interruptionReasons() {
        let setup = ScanningCameraSetup(preferences: CameraPreferences())
        let reasons: [CaptureSession.InterruptionReason] = [
            .videoDeviceInUseByAnotherClient, .videoDeviceNotAvailableDueToSystemPressure,
            .sensitiveContentMitigationActivated, .videoDeviceWasDisconnected,
        ]
        for reason in reasons {
            setup.sessionWasInterrupted(
                notification: Notification(
                    name: CaptureSession.wasInterruptedNotification, object: setup.session,
                    userInfo: [CaptureSessionInterruptionReasonKey: reason]))
        }
        #expect(setup.log == ["camera in use elsewhere", "system pressure", "sensitive content", "interrupted (100)"])
    }
}
