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

/// Records the changes an observation reports.
private final class ChangeLog<Value: Sendable>: @unchecked Sendable {  // unchecked: under `lock`.
    private let lock = NSLock()
    private var changes: [(new: Value?, old: Value?, prior: Bool, thread: Thread)] = []
    func append(_ change: NSKeyValueObservedChange<Value>) {
        lock.withLock { changes.append((change.newValue, change.oldValue, change.isPrior, Thread.current)) }
    }
    /// Records a plain event.
    func note(_ value: Value) { lock.withLock { changes.append((value, nil, false, Thread.current)) } }
    var all: [(new: Value?, old: Value?, prior: Bool, thread: Thread)] { lock.withLock { changes } }
}

@Suite("Key-value observation in Foundation's shape")
struct KeyValueObservationTests {
    @Test("options: .initial, .new, .old and .prior report as Foundation's KVO does")
    func options() throws {
        let connection = try makeVideoConnection()
        let log = ChangeLog<Double>()
        let observation = connection.observe(\.videoRotationAngle, options: [.initial, .new, .old, .prior]) {
            _, change in log.append(change)
        }
        #expect(log.all.count == 1 && log.all[0].new == 0 && log.all[0].old == nil && !log.all[0].prior)
        connection.videoRotationAngle = 90
        let changes = log.all
        #expect(changes.count == 3)
        #expect(changes[1].prior && changes[1].new == nil && changes[1].old == 0)
        #expect(!changes[2].prior && changes[2].new == 90 && changes[2].old == 0)
        #expect(changes[2].thread == Thread.current, "on the thread that made the change")
        connection.videoRotationAngle = 90
        #expect(log.all.count == 3, "setting the same angle changes nothing, so reports nothing")
        observation.invalidate()
        connection.videoRotationAngle = 180
        #expect(log.all.count == 3, "an invalidated observation reports nothing")
    }

    @Test("without options the change carries neither value; a released observation stops")
    func releasedObservationStops() throws {
        let connection = try makeVideoConnection()
        let log = ChangeLog<Bool>()
        var observation: NSKeyValueObservation? = connection.observe(\.isVideoMirrored) { _, change in
            log.append(change)
        }
        connection.isVideoMirrored = true
        #expect(log.all.count == 1 && log.all[0].new == nil && log.all[0].old == nil)
        _ = observation
        observation = nil
        connection.isVideoMirrored = false
        #expect(log.all.count == 1)
    }

    @Test("a session's isRunning is reported with the value it changed to, just before its notification")
    func sessionRunning() throws {
        let camera = VirtualCamera()
        let session = CaptureSession()
        session.addInput(try CaptureDeviceInput(device: camera.device))
        session.addOutput(CaptureVideoDataOutput())
        let log = ChangeLog<Bool>()
        let events = ChangeLog<String>()
        let observation = session.observe(\.isRunning, options: [.new, .old]) { _, change in
            log.append(change)
            events.note("kvo \(change.newValue!)")
        }
        defer { observation.invalidate() }
        let stopped = DispatchSemaphore(value: 0)
        let tokens = [CaptureSession.didStartRunningNotification, CaptureSession.didStopRunningNotification].map {
            name in
            NotificationCenter.default.addObserver(forName: name, object: session, queue: nil) { _ in
                events.note(name == CaptureSession.didStartRunningNotification ? "started" : "stopped")
                if name == CaptureSession.didStopRunningNotification { stopped.signal() }
            }
        }
        defer { tokens.forEach(NotificationCenter.default.removeObserver) }
        session.startRunning()
        session.stopRunning()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        let changes = log.all
        #expect(changes.map(\.new) == [true, false])
        #expect(changes.map(\.old) == [false, true])
        #expect(events.all.map(\.new) == ["kvo true", "started", "kvo false", "stopped"])
    }

    @Test("the stream description of every virtual microphone format")
    func streamDescriptions() {
        for format in VirtualMicrophone.standardFormats + [
            AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32, isInterleaved: false)
        ] {
            let description = FormatDescription.audio(format)
            let asbd = AudioFormatDescriptionGetStreamBasicDescription(description)?.pointee
            #expect(asbd == description.audioStreamBasicDescription)
            #expect(asbd?.mSampleRate == Double(format.sampleRate))
            #expect(asbd?.mChannelsPerFrame == UInt32(format.channelCount))
            #expect(asbd?.mBitsPerChannel == UInt32(format.sampleFormat.bitsPerSample))
            #expect(asbd?.mBytesPerFrame == UInt32(format.bytesPerFrame))
            let flags = asbd?.mFormatFlags ?? 0
            #expect((flags & kAudioFormatFlagIsFloat != 0) == format.sampleFormat.isFloat)
            #expect((flags & kAudioFormatFlagIsSignedInteger != 0) == !format.sampleFormat.isFloat)
            #expect((flags & kAudioFormatFlagIsNonInterleaved != 0) == !format.isInterleaved)
            #expect(
                AudioFormatDescriptionGetStreamBasicDescription(description)
                    == AudioFormatDescriptionGetStreamBasicDescription(description), "one kept description a format")
        }
        let video = FormatDescription.video(pixelFormat: .bgra, dimensions: .init(width: 2, height: 2))
        #expect(AudioFormatDescriptionGetStreamBasicDescription(video) == nil)
        #expect(video.audioStreamBasicDescription == nil)
    }

    @Test("a recording error bridges to NSError with ErrorRecordingSuccessfullyFinishedKey")
    func recordingErrorBridges() {
        let finished: Error = CaptureError(.maximumDurationReached, "done", recordingSuccessfullyFinished: true)
        #expect((finished as NSError).userInfo[ErrorRecordingSuccessfullyFinishedKey] as? Bool == true)
        #expect((finished as NSError).domain == FoundationErrorDomain)
        let other: Error = CaptureError(.deviceBusy, "busy")
        #expect((other as NSError).userInfo[ErrorRecordingSuccessfullyFinishedKey] == nil)
        #expect(other.localizedDescription == "busy")
    }

    private func makeVideoConnection() throws -> CaptureConnection {
        let camera = VirtualCamera()
        let session = CaptureSession()
        session.addInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput()
        session.addOutput(output)
        return try #require(output.connection(with: .video))
    }
}
