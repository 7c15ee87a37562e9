// A test helper: records the test pattern with MovieFileWriter until it is killed, printing a
// line each time the file grows (a fragment reached the disk) so a test can SIGKILL it after a
// few fragments and check what survived.
//
//     viewfinder-record-probe <path> <fragment seconds>
//
// With --measure it instead times the writer once (not a test): `frames` frames of the test
// pattern at `width`x`height` NV12, cycled from 30 pre-rendered ones, encoded with H.264 at
// `preset` on 2 threads; it also writes those 30 frames raw to `<path>.nv12` so the same frames
// can be fed to `ffmpeg -f rawvideo`.
//
//     viewfinder-record-probe --measure <path.mov> <width> <height> <frames> <preset>
import Foundation
import Viewfinder

let arguments = CommandLine.arguments
if arguments.count == 7, arguments[1] == "--measure", let width = Int(arguments[3]), let height = Int(arguments[4]),
    let count = Int(arguments[5])
{
    measure(path: arguments[2], width: width, height: height, count: count, preset: arguments[6])
    exit(0)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func measure(path: String, width: Int, height: Int, count: Int, preset: String) {
    do {
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: width, height: height, capacity: 30)
        var frames: [PixelBuffer] = []
        // VF_MEASURE_SOURCE: a raw NV12 file of at least 30 frames to use instead of the pattern
        // (the pattern is mostly flat and compresses far better than a camera's pictures).
        let source = ProcessInfo.processInfo.environment["VF_MEASURE_SOURCE"].flatMap {
            FileHandle(forReadingAtPath: $0)
        }
        let raw = source == nil && FileManager.default.createFile(atPath: path + ".nv12", contents: nil)
        let handle = raw ? FileHandle(forWritingAtPath: path + ".nv12") : nil
        for number in 0..<30 {
            guard let buffer = pool.makePixelBuffer() else { exit(3) }
            if let source {
                for plane in 0..<buffer.planeCount {
                    let bytes = buffer.bytes(ofPlane: plane)
                    let data = try source.read(upToCount: bytes.count) ?? Data()
                    data.copyBytes(
                        to: buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self),
                        count: min(data.count, bytes.count))
                }
            } else {
                TestPattern.render(sequenceNumber: UInt64(number), into: buffer)
            }
            for plane in 0..<buffer.planeCount {
                handle?.write(Data(buffer.bytes(ofPlane: plane)))
            }
            frames.append(buffer)
        }
        try handle?.close()
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: 10, timescale: 1)
        let writer = try MovieFileWriter(url: URL(fileURLWithPath: path), options: options)
        var settings = MovieVideoSettings(codec: .h264, width: width, height: height)
        settings.preset = preset
        try writer.addVideoStream(settings)
        let cpuStart = cpuSeconds()
        let wallStart = Date()
        for number in 0..<count {
            try writer.append(frames[number % 30], presentationTime: MediaTime(value: Int64(number), timescale: 30))
        }
        let summary = try writer.finish()
        let wall = Date().timeIntervalSince(wallStart)
        let cpu = cpuSeconds() - cpuStart
        print(
            "\(width)x\(height) \(preset): \(summary.videoFramesWritten) frames in \(String(format: "%.2f", wall)) s = \(String(format: "%.1f", Double(count) / wall)) fps, \(String(format: "%.1f", cpu * 1000 / Double(count))) CPU-ms/frame, \(summary.bytesWritten) bytes"
        )
    } catch {
        print("measure failed: \(error)")
        exit(1)
    }
}

guard arguments.count >= 3, let fragmentSeconds = Double(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: viewfinder-record-probe <path> <fragment seconds>\n".utf8))
    exit(2)
}
let width = 160
let height = 120
do {
    var options = MovieWriterOptions()
    options.fragmentInterval = MediaTime(seconds: fragmentSeconds)
    let writer = try MovieFileWriter(url: URL(fileURLWithPath: arguments[1]), options: options)
    var settings = MovieVideoSettings(codec: .h264, width: width, height: height, sourcePixelFormat: .nv12VideoRange)
    settings.preset = "ultrafast"
    settings.quality = .constantQuantizer(0)
    try writer.addVideoStream(settings)
    let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: width, height: height, capacity: 2)
    var lastSize: Int64 = 0
    for frame in 0..<100_000 {
        guard let buffer = pool.makePixelBuffer() else { exit(3) }
        TestPattern.render(sequenceNumber: UInt64(frame), into: buffer)
        try writer.append(buffer, presentationTime: MediaTime(value: Int64(frame), timescale: 30))
        if writer.bytesWritten != lastSize {
            lastSize = writer.bytesWritten
            FileHandle.standardOutput.write(Data("grew \(lastSize) \(writer.videoFramesWritten)\n".utf8))
        }
        usleep(2_000)
    }
    try writer.finish()
} catch {
    FileHandle.standardError.write(Data("viewfinder-record-probe: \(error)\n".utf8))
    exit(1)
}
