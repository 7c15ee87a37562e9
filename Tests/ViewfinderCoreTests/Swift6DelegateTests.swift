import Testing
import Viewfinder
import ViewfinderTestSupport

// Swift 6 mode: what compiles against AVFoundation compiles here — a delegate class with
// mutable state, neither Sendable nor locked, confined to the queue it is called on.

/// A frame gate as ported code writes it: `lastTimestamp` starts invalid (`MediaTime()`), so the
/// first frame passes; later ones pass when at least 1/`fps` s after the last accepted.
private final class FrameGate: NSObject, CaptureVideoDataOutputSampleBufferDelegate {
    var lastTimestamp = MediaTime()
    var accepted: [MediaTime] = []
    var seen = 0
    let fps: Int32 = 20
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        seen += 1
        let timestamp = SampleBufferGetPresentationTimeStamp(sampleBuffer)
        if timestamp - lastTimestamp >= MediaTimeMake(value: 1, timescale: fps) {
            lastTimestamp = timestamp
            accepted.append(timestamp)
        }
        arrived.signal()
    }
}

@Suite("Swift 6: a non-Sendable delegate with mutable state")
struct Swift6DelegateTests {
    @Test("is accepted and called on its queue only, one frame at a time; the frame gate passes the first frame")
    func mutableDelegate() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: virtualFormats(.bgra)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.addInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput()
        let gate = FrameGate()
        let queue = DispatchQueue(label: "gate")
        output.setSampleBufferDelegate(gate, queue: queue)
        session.addOutput(output)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        #expect(gate.arrived.wait(timeout: .now() + 10) == .success)  // frame 0
        for _ in 0..<6 {
            clock.advance(by: .fps(60))
            #expect(clock.waitUntilSleeping())
            #expect(gate.arrived.wait(timeout: .now() + 10) == .success)
        }
        session.stopRunning()
        let (seen, accepted) = queue.sync { (gate.seen, gate.accepted) }
        #expect(seen == 7)
        // 60 fps frames gated to 20 fps: frames 0, 3 and 6 pass.
        #expect(accepted.count == 3)
        #expect(zip(accepted.dropFirst(), accepted).allSatisfy { ($0 - $1).seconds >= 0.05 - 1e-9 })
    }
}
