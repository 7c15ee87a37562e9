// A test helper: records the test pattern with MovieFileWriter until it is killed, printing a
// line each time the file grows (a fragment reached the disk) so a test can SIGKILL it after a
// few fragments and check what survived.
//
//     viewfinder-record-probe <path> <fragment seconds> [codec: h264 | mjpeg-frames-dir]
import Foundation
import Viewfinder

let arguments = CommandLine.arguments
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
