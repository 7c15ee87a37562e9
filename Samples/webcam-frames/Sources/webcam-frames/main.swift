// webcam-frames: the smallest Viewfinder app — a V4L2 camera's frames, with nothing else linked.
//
//   webcam-frames [--frames N] [--directory DIR]
//
// Captures N frames (default 30) from the first camera in DIR (default /dev) as BGRA, prints one
// line per frame and the output's statistics, and exits 0 when every frame is accounted for.
import Dispatch
import Foundation
import ViewfinderCore
import ViewfinderV4L2

var frames = 30
var directory = "/dev"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--frames": frames = arguments.popFirst().flatMap(Int.init) ?? frames
    case "--directory": directory = arguments.popFirst() ?? directory
    default:
        FileHandle.standardError.write(Data("usage: webcam-frames [--frames N] [--directory DIR]\n".utf8))
        exit(2)
    }
}

// The one line a core-only app adds: register the backends it links (the umbrella `Viewfinder`
// module registers all of them itself).
CaptureDevice.registerProvider(V4L2DeviceProvider(directoryPath: directory))

/// Prints each frame and signals once `limit` frames have arrived.
final class FrameHandler: CaptureVideoDataOutputSampleBufferDelegate {
    let limit: Int
    let done = DispatchSemaphore(value: 0)
    private var count = 0  // touched only on the delegate queue

    init(limit: Int) { self.limit = limit }

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        count += 1
        print(
            "frame \(count): \(image.width)x\(image.height) \(image.pixelFormat.name) at \(sampleBuffer.presentationTimeStamp.seconds) s"
        )
        if count == limit { done.signal() }
    }
}

guard let camera = CaptureDevice.default(for: .video) else {
    print("no camera in \(directory): plug one in, or check that this user may open /dev/video* (the video group)")
    exit(1)
}
print("camera: \(camera.localizedName) [\(camera.uniqueID)]")
let session = CaptureSession()
let output = CaptureVideoDataOutput()
let handler = FrameHandler(limit: frames)  // outputs hold delegates weakly: keep it
do {
    session.beginConfiguration()
    session.sessionPreset = .low
    let input = try CaptureDeviceInput(device: camera)
    guard session.canAddInput(input) else { fatalError("the session refused the camera") }
    session.addInput(input)
    output.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
    output.setSampleBufferDelegate(handler, queue: DispatchQueue(label: "frames"))
    guard session.canAddOutput(output) else { fatalError("the session refused the output") }
    session.addOutput(output)
    session.commitConfiguration()
} catch {
    print("cannot capture from \(camera.localizedName): \(error)")
    exit(1)
}
session.startRunning()
let arrived = handler.done.wait(timeout: .now() + 30) == .success
session.stopRunning()
let statistics = output.statistics
print("\(statistics)")
guard arrived else {
    print("fewer than \(frames) frames in 30 s")
    exit(1)
}
exit(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured ? 0 : 1)
