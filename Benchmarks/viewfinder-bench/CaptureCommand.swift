import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// `viewfinder-bench capture`: the whole capture path as an application would run it, for
/// `Scripts/capture-path-bench.sh` (which times the whole process against FFmpeg and GStreamer):
/// the default V4L2 device discovery, the camera's native format chosen under the configuration
/// lock, a session, a video data output delivering `--format` to a delegate that counts, exit after
/// `--frames` frames. `--camera-format mjpeg` picks the camera's native Motion-JPEG format (decoded
/// by the output; `--format nv12-full` is full-range NV12, what JFIF frames decode to).
enum CaptureCommand {
    final class Counter: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
        let target: Int
        let delivered = Atomic<Int>(0)
        let drops = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        init(target: Int) { self.target = target }

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            if delivered.add(1, ordering: .relaxed).newValue == target { done.signal() }
        }

        func captureOutput(
            _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            drops.add(sampleBuffer.droppedFrameCount, ordering: .relaxed)
        }
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("viewfinder-bench capture: \(message)\n".utf8))
        return 1
    }

    static func main(_ arguments: [String]) -> Int32 {
        var formatName = "native"
        var frames = 300
        var size: (Int, Int)?
        var deviceName: String?
        var cameraFormat = "yuyv"
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard let value = rest.popFirst() else { return fail("\(argument) needs a value") }
            switch argument {
            case "--format": formatName = value
            case "--camera-format": cameraFormat = value
            case "--frames": frames = Int(value) ?? 0
            case "--device": deviceName = value
            case "--size":
                let parts = value.split(separator: "x").compactMap { Int($0) }
                guard parts.count == 2 else { return fail("--size needs WxH, got \(value)") }
                size = (parts[0], parts[1])
            default: return fail("unknown argument \(argument)")
            }
        }
        guard frames > 0 else { return fail("--frames needs a positive count") }
        let wanted: PixelFormat?
        switch formatName {
        case "native": wanted = nil
        case "bgra": wanted = .bgra
        case "nv12": wanted = .nv12VideoRange
        case "nv12-full": wanted = .nv12FullRange
        default: return fail("--format is native, bgra, nv12 or nv12-full, not \(formatName)")
        }
        let cameraPixelFormat: PixelFormat = cameraFormat == "mjpeg" ? .mjpeg : .yuyv
        let devices = CaptureDevice.devices(for: .video).filter { $0.deviceType != .virtual }
        guard let device = devices.first(where: { deviceName == nil || $0.localizedName == deviceName }) else {
            return fail("no V4L2 camera found (\(devices.map(\.localizedName)))")
        }
        let candidates = device.formats.filter {
            !$0.isEmulated && $0.pixelFormat == cameraPixelFormat
                && (size == nil || ($0.dimensions.width == size!.0 && $0.dimensions.height == size!.1))
        }
        guard let format = candidates.first else {
            return fail(
                "'\(device.localizedName)' has no native \(cameraFormat) format of that size: \(device.formats)")
        }
        let counter = Counter(target: frames)
        let session = CaptureSession()
        let output = CaptureVideoDataOutput()
        do {
            try device.lockForConfiguration()
            try device.setActiveFormat(format)
            device.unlockForConfiguration()
            if let wanted { output.typedVideoSettings = try VideoSettings(pixelFormat: wanted) }
            output.alwaysDiscardsLateVideoFrames = false
            output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "capture.delegate"))
            session.beginConfiguration()
            session.sessionPreset = .inputPriority
            try session.tryAddInput(try CaptureDeviceInput(device: device))
            try session.tryAddOutput(output)
            session.commitConfiguration()
        } catch {
            return fail("\(error)")
        }
        session.startRunning()
        let finished = counter.done.wait(timeout: .now() + 600) == .success
        let delivered = output.deliveredFormat.map { "\($0.pixelFormat) \($0.size)" } ?? "–"
        let statistics = output.statistics
        session.stopRunning()
        FileHandle.standardError.write(
            Data(
                "viewfinder-bench capture: \(device.localizedName) \(device.activeFormat) -> \(delivered), engine \(output.isZeroCopy ? "zero-copy" : output.conversionEngine?.rawValue ?? "none"), \(statistics)\n"
                    .utf8))
        return finished ? 0 : fail("timed out after \(counter.delivered.load(ordering: .relaxed)) frames")
    }
}
