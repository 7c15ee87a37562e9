import Foundation
import Synchronization
import Viewfinder

/// A PipeWire camera node for tests: a ``PipeWireProducer`` whose frames are the virtual camera's
/// test pattern (``TestPattern``), each showing its own sequence number, in YUYV, NV12, I420, BGRx
/// or Motion-JPEG (a 4:2:0 JPEG of the I420 pattern), paced at its frame rate.
///
/// Thread safety: all members may be used from any thread.
package final class PipeWireTestCamera: Sendable {
    private let connection: PipeWireConnection
    private let producer: PipeWireProducer
    /// The node's format as Viewfinder lists it.
    package var format: CaptureDevice.Format { producer.format }

    /// Publishes node `name` in `format` (`yuyv`, `nv12`, `i420`, `bgrx` or `mjpeg`) at `width` x
    /// `height` and `framesPerSecond`, on the daemon at `remoteName` (default `$PIPEWIRE_REMOTE`),
    /// with `controls` in its PropInfo and Props (none by default). With `formatDelayMilliseconds`
    /// > 0 the node appears offering nothing and offers its format that much later.
    package init(
        name: String, format: String, width: Int, height: Int, framesPerSecond: Int32, remoteName: String? = nil,
        controls: [PipeWireProducer.Control] = [], formatDelayMilliseconds: Int = 0
    ) throws(CaptureError) {
        let pixelFormat: PixelFormat
        switch format {
        case "yuyv": pixelFormat = .yuyv
        case "nv12": pixelFormat = .nv12VideoRange
        case "i420": pixelFormat = .i420
        case "bgrx": pixelFormat = .bgra
        case "mjpeg": pixelFormat = .mjpeg
        default:
            throw CaptureError(
                .invalidArgument, "unknown test camera format '\(format)': use yuyv, nv12, i420, bgrx or mjpeg")
        }
        let captureFormat = PipeWireFormat.published(
            pixelFormat, width: width, height: height,
            frameDuration: MediaTime(value: 1, timescale: framesPerSecond))
        connection = try PipeWireConnection(remoteName: remoteName)
        let fill: (PipeWireProducer.Target, UInt64) -> Int
        if pixelFormat == .mjpeg {
            let pool = try PixelBufferPool(pixelFormat: .i420, width: width, height: height, capacity: 1)
            let encoder = try JPEGEncoder(quality: 0.9)
            fill = { target, sequence in
                guard case .compressed(let memory, let capacity) = target, let image = pool.makePixelBuffer() else {
                    return 0
                }
                TestPattern.render(sequenceNumber: sequence, into: image)
                guard let jpeg = try? encoder.encode(image), jpeg.count <= capacity else { return 0 }
                jpeg.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: jpeg.count) }
                return jpeg.count
            }
        } else {
            fill = { target, sequence in
                guard case .raw(let buffer) = target else { return 0 }
                TestPattern.render(sequenceNumber: sequence, into: buffer)
                return buffer.dataSize
            }
        }
        producer = try PipeWireProducer(
            connection: connection, name: name, description: "Viewfinder test camera \(name)", format: captureFormat,
            formatDelayMilliseconds: formatDelayMilliseconds, fill: fill)
        if !controls.isEmpty { try producer.publish(controls: controls) }
    }

    /// Publishes `controls` on the node (see ``PipeWireProducer/publish(controls:)``).
    package func publish(controls: [PipeWireProducer.Control], showingValues: Bool = true) throws(CaptureError) {
        try producer.publish(controls: controls, showingValues: showingValues)
    }

    /// The value control `id` has at the producer now, or `nil` without such a control.
    package func value(ofControl id: UInt32) -> Int32? { producer.value(ofControl: id) }

    /// The value floating-point control `id` has at the producer now, or `nil` without such a control.
    package func floatValue(ofControl id: UInt32) -> Double? { producer.floatValue(ofControl: id) }

    /// Frames produced and skipped, and whether a consumer is streaming.
    package var counts: (produced: UInt64, skipped: UInt64, isStreaming: Bool) { producer.counts }

    /// Removes the node (consumers see it go) and disconnects.
    package func close() {
        producer.close()
        connection.close()
    }

    /// The frame the camera produces for `sequence` in `format` (raw formats), for byte-exact checks.
    package static func expectedFrame(_ sequence: UInt64, format: CaptureDevice.Format) -> PixelBuffer? {
        guard
            let pool = try? PixelBufferPool(
                pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight,
                capacity: 1), let buffer = pool.makePixelBuffer()
        else { return nil }
        TestPattern.render(sequenceNumber: sequence, into: buffer)
        return buffer
    }
}
