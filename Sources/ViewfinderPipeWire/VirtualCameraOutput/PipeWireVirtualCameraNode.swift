import CPipeWire
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// A camera node this process publishes from frames it pushes (the shim's `vf_pw_vcam`): it offers
/// several raw formats, the consumer that links to it picks one, and ``publish(sequenceNumber:fill:)``
/// writes a frame straight into a free PipeWire buffer in that format — or refuses at once when
/// no consumer streams or every buffer is held (newest wins: nothing waits).
///
/// Thread safety: all members may be used from any thread; `fill` runs on the publishing thread
/// with the node's loop locked (so the buffer cannot be taken away while it is written).
// unchecked: the handle is used under the loop's lock, the fill context under `publishing`.
package final class PipeWireVirtualCameraNode: @unchecked Sendable {
    /// What a publish came to.
    package enum Outcome: Equatable {
        /// The frame was queued to the consumer.
        case published
        /// No consumer is streaming (none linked, or its link is paused).
        case noConsumer
        /// The consumer holds every buffer, or is still taking the previous frame.
        case consumerBusy
        /// `fill` wrote nothing (the buffer went back marked corrupted).
        case notWritten
    }

    /// The node's state as the shim reports it.
    package struct Status: Sendable {
        /// Whether a consumer's link is streaming.
        package var isStreaming: Bool
        /// The format the consumer agreed on, once one did (and its first plane's stride).
        package var format: CaptureDevice.Format?
        /// The first plane's bytes per row in the agreed format.
        package var bytesPerRow: Int
        /// Frames queued to consumers so far, and frames refused for want of a free buffer.
        package var queued: UInt64
        package var busy: UInt64
    }

    /// What `fill` is given: a buffer over PipeWire's memory in the agreed format.
    // unchecked: used only under `publishing`.
    private final class FillContext: @unchecked Sendable {
        var fill: ((PixelBuffer) -> Bool)?
        /// Buffers over PipeWire's memory, one per (address, layout): the node's buffers are few
        /// and stay while the format does, so publishing allocates no object per frame.
        var views: [(key: ViewKey, buffer: PixelBuffer)] = []
    }

    /// What a buffer over PipeWire's memory is made for: its address and the frame's geometry.
    private struct ViewKey: Equatable {
        var address: UnsafeMutableRawPointer
        var layout: UInt32
        var width: UInt32
        var height: UInt32
        var stride: Int32
    }

    private let connection: PipeWireConnection
    private let handle: OpaquePointer
    private let closed = Atomic<Bool>(false)
    /// Serialises publishers and `close()` (a buffer is never written after the node is gone).
    private let publishing = NSLock()
    private let context = FillContext()
    /// The node's `node.name`.
    package let name: String

    /// Publishes node `name` (shown as `description`) through `connection`, offering `formats`
    /// (raw ones only; the first is preferred).
    package init(
        connection: PipeWireConnection, name: String, description: String, formats: [CaptureDevice.Format]
    ) throws(CaptureError) {
        self.connection = connection
        self.name = name
        var requests = Self.requests(for: formats)
        var message = [CChar](repeating: 0, count: 256)
        guard
            let handle = vf_pw_vcam_open(
                connection.handle, name, description, &requests, Int32(requests.count), &message, message.count)
        else {
            throw CaptureError(
                .ioError,
                "cannot publish PipeWire camera node '\(name)' (\(connection.remoteDescription)): \(PipeWireConnection.text(message))"
            )
        }
        self.handle = handle
    }

    /// Offers `formats` instead; a consumer linked now renegotiates.
    package func offer(_ formats: [CaptureDevice.Format]) throws(CaptureError) {
        var requests = Self.requests(for: formats)
        let result = vf_pw_vcam_update_formats(handle, &requests, Int32(requests.count))
        guard result == 0 else {
            throw CaptureError(
                .ioError,
                "cannot offer new formats on PipeWire node '\(name)': \(String(cString: strerror(-result)))",
                errno: -result)
        }
    }

    private static func requests(for formats: [CaptureDevice.Format]) -> [vf_pw_format] {
        formats.filter { !$0.pixelFormat.isCompressed }.prefix(8).map {
            PipeWireFormat.request(for: $0, frameDuration: $0.minFrameDuration)
        }
    }

    /// The node's state now.
    package var status: Status {
        var raw = vf_pw_vcam_status()
        vf_pw_vcam_get_status(handle, &raw)
        var format: CaptureDevice.Format?
        if raw.has_format != 0, let captured = PipeWireFormat.captureFormat(raw.format) {
            format = captured
        }
        return Status(
            isStreaming: raw.streaming != 0, format: format, bytesPerRow: Int(raw.stride), queued: raw.queued,
            busy: raw.busy)
    }

    /// Whether a consumer is streaming and a format is agreed (a cheap check before work).
    package var canPublish: Bool {
        var raw = vf_pw_vcam_status()
        vf_pw_vcam_get_status(handle, &raw)
        return raw.streaming != 0 && raw.has_format != 0
    }

    /// Publishes one frame: `fill` writes it into a buffer over PipeWire's memory (in the agreed
    /// format, its size and rows as the buffer says) and returns whether it did. Stamped with
    /// `sequenceNumber` and the `CLOCK_MONOTONIC` time of queueing.
    package func publish(sequenceNumber: UInt64, fill: (PixelBuffer) -> Bool) -> Outcome {
        guard !closed.load(ordering: .acquiring) else { return .noConsumer }
        return publishing.withLock { () -> Outcome in
            guard !closed.load(ordering: .acquiring) else { return .noConsumer }
            return withoutActuallyEscaping(fill) { fill -> Outcome in
                context.fill = fill
                defer { context.fill = nil }
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nanoseconds = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
                let callback: vf_pw_vcam_fill_fn = { user, data, capacity, stride, format in
                    guard let user, let data, let format else { return 0 }
                    let context = Unmanaged<FillContext>.fromOpaque(user).takeUnretainedValue()
                    guard let fill = context.fill else { return 0 }
                    let key = ViewKey(
                        address: UnsafeMutableRawPointer(data), layout: format.pointee.video_format,
                        width: format.pointee.width, height: format.pointee.height, stride: stride)
                    let buffer: PixelBuffer
                    if let view = context.views.first(where: { $0.key == key }) {
                        buffer = view.buffer
                    } else {
                        // A buffer not seen in this geometry yet (the first frames, a renegotiation).
                        guard let pixelFormat = PipeWireFormat.pixelFormat(of: format.pointee) else { return 0 }
                        let layout = PlaneLayout(
                            pixelFormat: pixelFormat, width: Int(key.width), height: Int(key.height),
                            firstPlaneBytesPerRow: Int(stride), planeAlignment: 1)
                        buffer = PixelBuffer(memory: key.address, layout: layout, owner: nil, slot: 0)
                        if context.views.count >= 16 { context.views.removeFirst() }
                        context.views.append((key, buffer))
                    }
                    guard buffer.dataSize <= Int(capacity) else { return 0 }
                    return fill(buffer) ? UInt32(buffer.dataSize) : 0
                }
                let result = vf_pw_vcam_publish(
                    handle, sequenceNumber, nanoseconds, callback, Unmanaged.passUnretained(context).toOpaque())
                switch result {
                case 1: return .published
                case 0: return .consumerBusy
                case -2: return .notWritten
                default: return .noConsumer
                }
            }
        }
    }

    /// Removes the node (consumers see it go). Called by `deinit` too.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // A publisher that got the lock first finishes; any later one sees `closed`.
        publishing.withLock { context.views.removeAll() }
        nonisolated(unsafe) let handle = handle
        let connection = connection
        PipeWireConnection.offLoopThread(connection.handle) {
            withExtendedLifetime(connection) { vf_pw_vcam_close(handle) }
        }
    }

    deinit { close() }
}
