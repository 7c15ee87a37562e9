@preconcurrency import Dispatch
// Test helper for the PipeWire backend, run by the tests as a separate process:
//
//   viewfinder-pipewire-probe produce NAME FORMAT WIDTHxHEIGHT FPS
//       publishes camera node NAME (yuyv, nv12, i420, bgrx or mjpeg) whose frames show their
//       sequence numbers (TestPattern); prints "ready" once published and runs until stdin closes.
//   viewfinder-pipewire-probe capture NAME-SUBSTRING COUNT
//       captures COUNT frames of the first PipeWire camera whose unique ID contains the substring
//       through a Viewfinder session (BGRA), prints "seq N P" per frame (its sequence number and
//       the number read from its pixels) and "done TAKEN DROPPED" at the end (TAKEN: the first COUNT
//       delivered frames, those printed; DROPPED: every drop the output reported).
//
// The daemon is the one $PIPEWIRE_REMOTE names (Scripts/pipewire.sh sets it for the tests).
import Foundation
import Synchronization
import Viewfinder
import ViewfinderSimulator

/// Prints the first `limit` frames' pattern numbers and signals `done` at the last. Frames the
/// output hands over after it, while the session is being stopped (on a busy machine the main
/// thread may wake a frame or two late), are not taken: the probe reports exactly `limit`.
final class FrameCounter: CaptureVideoDataOutputSampleBufferDelegate {
    let limit: Int
    let done = DispatchSemaphore(value: 0)
    private let count = Mutex(0)
    init(limit: Int) { self.limit = limit }
    var received: Int { count.withLock { $0 } }

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let taken = count.withLock { count -> Int? in
            guard count < limit else { return nil }
            count += 1
            return count
        }
        guard let taken else { return }
        let pattern = sampleBuffer.imageBuffer.flatMap(TestPattern.readSequenceNumber(from:))
        say("seq \(sampleBuffer.sequenceNumber) \(pattern.map(String.init) ?? "unreadable")")
        if taken == limit { done.signal() }
    }
}

/// One line on stdout, unbuffered (the tests read it as it comes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
let arguments = CommandLine.arguments

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("viewfinder-pipewire-probe: \(message)\n".utf8))
    exit(2)
}

guard arguments.count >= 2 else { fail("usage: produce NAME FORMAT WxH FPS | capture ID COUNT") }

switch arguments[1] {
case "produce":
    guard arguments.count == 6 else { fail("usage: produce NAME FORMAT WxH FPS") }
    let size = arguments[4].split(separator: "x").compactMap { Int($0) }
    guard size.count == 2, let fps = Int32(arguments[5]) else { fail("bad size or rate") }
    do {
        let producer = try PipeWireTestCamera(
            name: arguments[2], format: arguments[3], width: size[0], height: size[1], framesPerSecond: fps)
        say("ready")
        // Until the test closes stdin (or kills the process).
        _ = FileHandle.standardInput.readDataToEndOfFile()
        producer.close()
    } catch {
        fail("\(error)")
    }
case "capture":
    guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: capture ID COUNT") }
    // The node may still be on its way through the registry: look again as cameras connect.
    let connected = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
        forName: CaptureDevice.wasConnectedNotification, object: nil, queue: nil
    ) { _ in connected.signal() }
    var found = CaptureDevice.devices(for: .video).first { $0.uniqueID.contains(arguments[2]) }
    while found == nil, connected.wait(timeout: .now() + 10) == .success {
        found = CaptureDevice.devices(for: .video).first { $0.uniqueID.contains(arguments[2]) }
    }
    NotificationCenter.default.removeObserver(observer)
    guard let device = found else {
        fail(
            "no PipeWire camera matching '\(arguments[2])' among \(CaptureDevice.devices(for: .video).map(\.uniqueID))")
    }
    let counter = FrameCounter(limit: count)
    let session = CaptureSession()
    let output = CaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = false
    output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "probe.frames"))
    do {
        output.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(output)
        session.commitConfiguration()
    } catch {
        fail("\(error)")
    }
    say("started \(device.uniqueID)")
    session.startRunning()
    guard counter.done.wait(timeout: .now() + 30) == .success else {
        fail("timed out after \(counter.received) frames")
    }
    session.stopRunning()
    // Frames taken (the first COUNT delivered) and every drop the output reported.
    say("done \(counter.received) \(output.statistics.dropped)")
default:
    fail("unknown command \(arguments[1])")
}
