import CPipeWire
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// A PipeWire camera node (`media.class` `Video/Source`, `media.role` `Camera`) behind a
/// ``CaptureDevice``: streams through a `pw_stream` linked to the node by the session manager
/// (`target.object` = the node's serial), in exactly the negotiated format.
///
/// Frames: each buffer PipeWire hands over (MemFd, MemPtr, or a mappable DmaBuf) is copied into a
/// slot of the stream's own ring and given back to PipeWire at once, so a user holding a frame
/// never keeps the producer's buffer, and a node that goes away cannot pull memory from under a
/// held frame. Presentation times are the buffer's `spa_meta_header` pts (the producer's
/// `CLOCK_MONOTONIC`, the session's host clock), else the arrival time; its `seq` is the sequence
/// number (a gap is frames lost). Frames flagged corrupt, and raw frames shorter than their size,
/// are skipped and counted. With every slot held by users a frame is dropped (a sequence gap).
///
/// Presence: the provider marks the camera disconnected when its node leaves the registry and
/// connected again (at a new node ID) when a node of the same name returns; a running stream
/// whose node goes reports ``CaptureError/Code/deviceDisconnected`` to its sink.
///
/// Thread safety: all members may be used from any thread; `startStreaming` and `stopStreaming`
/// are serialised by the owning ``CaptureDevice``.
package final class PipeWireCameraBackend: DeviceBackend {
    package let uniqueID: String
    package let localizedName: String
    package let modelID: String
    package var manufacturer: String { "" }
    package var deviceType: CaptureDevice.DeviceType { .external }
    /// What the node offers (replaced when the node comes back offering something else).
    package var formats: [CaptureDevice.Format] { offered.withLock { $0 } }
    private let offered: Mutex<[CaptureDevice.Format]>
    /// The node's `node.name` (stable across restarts of its producer).
    package let nodeName: String
    /// The V4L2 node behind the camera (`api.v4l2.path`, else `object.path` `v4l2:/dev/videoN`),
    /// if PipeWire took it from V4L2.
    package let v4l2Path: String?
    /// What `VIDIOC_QUERYCAP` told PipeWire's V4L2 plugin (`api.v4l2.cap.bus_info`,
    /// `api.v4l2.cap.card`); empty for other nodes.
    package let v4l2BusInfo: String
    package let v4l2Card: String
    /// The node's `device.bus-path` (`pci-0000:00:14.0-usb-0:2:1.0`), where its producer set one.
    package let busPath: String

    private struct Node {
        var id: UInt32
        var serial: UInt32
        var isConnected = true
    }
    private let node: Mutex<Node>
    private let connection: Mutex<PipeWireConnection?>
    private let running = Mutex<PipeWireCaptureStream?>(nil)

    private struct Controls {
        var map: PipeWireControlMap
        /// Values set through Viewfinder, by SPA property ID: the value of a control whose node's
        /// Props do not carry it (PipeWire's V4L2 plugin shows only device properties there).
        var set: [UInt32: Int] = [:]
    }
    private let controlState: Mutex<Controls>

    package init(
        uniqueID: String, details: vf_pw_node_details, nodeID: UInt32, formats: [CaptureDevice.Format],
        connection: PipeWireConnection, controls: [vf_pw_control] = []
    ) {
        self.uniqueID = uniqueID
        let description = Self.string(details.description)
        let name = Self.string(details.name)
        self.localizedName = description.isEmpty ? name : description
        self.nodeName = name
        let api = Self.string(details.device_api)
        self.modelID = api.isEmpty ? "pipewire" : "pipewire-\(api)"
        let path = Self.string(details.v4l2_path)
        let objectPath = Self.string(details.object_path)
        self.v4l2Path =
            !path.isEmpty ? path : objectPath.hasPrefix("v4l2:/") ? String(objectPath.dropFirst("v4l2:".count)) : nil
        self.v4l2BusInfo = Self.string(details.v4l2_bus_info)
        self.v4l2Card = Self.string(details.v4l2_card)
        self.busPath = Self.string(details.bus_path)
        self.offered = Mutex(formats)
        self.node = Mutex(Node(id: nodeID, serial: details.serial))
        self.connection = Mutex(connection)
        self.controlState = Mutex(Controls(map: PipeWireControlMap(controls)))
    }

    /// A fixed-size C string field as a Swift string.
    package static func string<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    package var isConnected: Bool { node.withLock { $0.isConnected } }

    /// The node's registry ID now.
    package var nodeID: UInt32 { node.withLock { $0.id } }

    /// Called by the provider: the node is back (possibly at a new ID, through a new connection,
    /// offering other formats).
    package func reappeared(
        id: UInt32, serial: UInt32, formats: [CaptureDevice.Format], connection: PipeWireConnection,
        controls: [vf_pw_control]
    ) {
        offered.withLock { $0 = formats }
        node.withLock { $0 = Node(id: id, serial: serial) }
        self.connection.withLock { $0 = connection }
        controlState.withLock { $0 = Controls(map: PipeWireControlMap(controls)) }
    }

    /// Called by the provider: the node left the registry (or the daemon went away). A running
    /// stream reports the camera disconnected.
    package func disappeared() {
        node.withLock { $0.isConnected = false }
        running.withLock { $0 }?.nodeDidGo()
    }

    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        let duration = format.supports(frameDuration: frameDuration) ? frameDuration : format.minFrameDuration
        // A node that left is not asked for by its old serial: PipeWire's session manager would
        // link the stream to another camera (the default source) instead.
        let (serial, isConnected) = node.withLock { ($0.serial, $0.isConnected) }
        guard isConnected, let connection = connection.withLock({ $0 }) else {
            throw CaptureError(
                .deviceDisconnected,
                "'\(localizedName)' is disconnected: its PipeWire node is gone; capture resumes when it comes back")
        }
        let stream = try PipeWireCaptureStream(
            connection: connection, serial: serial, format: format, frameDuration: duration, name: localizedName,
            sink: sink)
        running.withLock { $0 = stream }
        return duration
    }

    package func stopStreaming() {
        let stream = running.withLock { running in
            defer { running = nil }
            return running
        }
        stream?.stop()
    }
}

/// Memory for a stream's frames: `count` slots of `slotSize` bytes, lent as ``PixelBuffer``s and
/// taken back when their last reference goes.
///
/// Thread safety: all members may be used from any thread.
package final class PipeWireFrameSlots: PixelMemoryOwner {
    package let layout: PlaneLayout
    package let slotSize: Int
    // The slots' memory, fixed at init: each slot is written only while no one else holds it.
    private nonisolated(unsafe) let memory: [UnsafeMutableRawPointer]
    private let free: Mutex<[Int]>
    private let spares: SpareObjects<PixelBuffer>

    package init(layout: PlaneLayout, count: Int) {
        self.layout = layout
        self.slotSize = layout.totalBytes
        memory = (0..<count).map { _ in UnsafeMutableRawPointer.allocate(byteCount: layout.totalBytes, alignment: 64) }
        free = Mutex(Array((0..<count).reversed()))
        spares = SpareObjects(limit: count)
    }

    deinit {
        for slot in memory { slot.deallocate() }
    }

    /// A free slot's memory, or `nil` when users hold every slot.
    package func take() -> (slot: Int, memory: UnsafeMutableRawPointer)? {
        guard let slot = free.withLock({ $0.popLast() }) else { return nil }
        return (slot, memory[slot])
    }

    /// Slot `slot` as a buffer holding `dataSize` bytes.
    package func lend(slot: Int, dataSize: Int) -> PixelBuffer {
        PixelBuffer.make(
            memory: memory[slot], layout: layout, dataSize: dataSize, owner: self, slot: slot, spares: spares)
    }

    package func reclaim(slot: Int) {
        free.withLock { $0.append(slot) }
    }

    /// Slots users hold now.
    package var lentCount: Int { memory.count - free.withLock { $0.count } }
}

/// One running `pw_stream` of a ``PipeWireCameraBackend``: its frames are copied into a
/// ``PipeWireFrameSlots`` ring on PipeWire's loop thread and handed to the sink there.
///
/// Thread safety: `stop` and `nodeDidGo` may be called from any thread; the frame and state
/// callbacks run on the loop thread.
package final class PipeWireCaptureStream: @unchecked Sendable {  // unchecked: `handle` is used under the loop's lock.
    private struct State {
        var sequence: UInt64 = 0
        var lastSequence: UInt64?
        var hasDelivered = false
        var firstSkipped: UInt64?
        var hasStreamed = false
        var failed = false
        var stopped = false
    }

    private let format: CaptureDevice.Format
    private let duration: MediaTime
    private let sink: DeviceStreamSink
    private let slots: PipeWireFrameSlots
    private let name: String
    private let state = Mutex(State())
    private let host = HostClock()
    private var handle: OpaquePointer?
    private var unmanaged: Unmanaged<PipeWireCaptureStream>?
    /// The connection, kept alive while the stream runs.
    private let connection: PipeWireConnection

    package init(
        connection: PipeWireConnection, serial: UInt32, format: CaptureDevice.Format, frameDuration: MediaTime,
        name: String, sink: DeviceStreamSink
    ) throws(CaptureError) {
        self.connection = connection
        self.format = format
        self.duration = frameDuration
        self.sink = sink
        self.name = name
        self.slots = PipeWireFrameSlots(
            layout: PlaneLayout(
                pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight),
            count: 8)
        var request = PipeWireFormat.request(for: format, frameDuration: frameDuration)
        var message = [CChar](repeating: 0, count: 256)
        let user = Unmanaged.passRetained(self)
        unmanaged = user
        let onFrame: vf_pw_frame_fn = { user, frame in
            Unmanaged<PipeWireCaptureStream>.fromOpaque(user!).takeUnretainedValue().receive(frame!.pointee)
        }
        let onState: vf_pw_state_fn = { user, state, error in
            Unmanaged<PipeWireCaptureStream>.fromOpaque(user!).takeUnretainedValue().stateDidChange(
                state, error: error.map { String(cString: $0) })
        }
        handle = vf_pw_stream_open(
            connection.handle, serial, "Viewfinder", &request, onFrame, onState, user.toOpaque(), &message,
            message.count)
        guard handle != nil else {
            user.release()
            unmanaged = nil
            throw CaptureError(.ioError, "'\(name)': \(PipeWireConnection.text(message))")
        }
    }

    /// Disconnects; the sink gets nothing after this returns.
    package func stop() {
        let handle = state.withLock { state -> OpaquePointer? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return self.handle
        }
        guard let handle else { return }
        // From the loop thread (a callback that dropped the session), the close runs on another
        // thread; `stopped` already keeps frames and failures from the sink.
        nonisolated(unsafe) let stream = handle
        let unmanaged = unmanaged
        PipeWireConnection.offLoopThread(connection.handle) {
            vf_pw_stream_close(stream)
            unmanaged?.release()
        }
    }

    /// The node left the registry: report the camera gone (once).
    package func nodeDidGo() {
        fail(CaptureError(.deviceDisconnected, "'\(name)' was disconnected: its PipeWire node went away"))
    }

    private func fail(_ error: CaptureError) {
        let report = state.withLock { state -> Bool in
            guard !state.failed, !state.stopped else { return false }
            state.failed = true
            return true
        }
        if report { sink.deviceDidFail(error) }
    }

    private func stateDidChange(_ newState: Int32, error: String?) {
        switch Int(newState) {
        case VF_PW_STATE_STREAMING:
            state.withLock { $0.hasStreamed = true }
        case VF_PW_STATE_ERROR:
            fail(CaptureError(.driverError, "the PipeWire stream of '\(name)' failed: \(error ?? "no reason given")"))
        case VF_PW_STATE_UNCONNECTED:
            fail(CaptureError(.deviceDisconnected, "'\(name)' was disconnected: its PipeWire stream was unlinked"))
        default:
            break
        }
    }

    /// One buffer from PipeWire (on the loop thread): checked, copied into a slot, handed on.
    private func receive(_ frame: vf_pw_frame) {
        let arrival = host.now()
        let (number, skip) = state.withLock { state -> (UInt64, Bool) in
            let number = frame.has_header != 0 ? frame.seq : state.sequence
            state.sequence = number &+ 1
            return (number, state.stopped || state.failed)
        }
        guard !skip else { return }
        let compressed = format.pixelFormat.isCompressed
        let size = Int(frame.size)
        let cause: SkippedFrameCause? =
            frame.corrupted != 0
            ? .errorFlag
            : size == 0 || (!compressed && size < minimumBytes(stride: Int(frame.stride)))
                ? .shortPayload
                : compressed && size > slots.slotSize ? .oversizedPayload : nil
        if let cause {
            state.withLock { state in
                if !state.hasDelivered, state.firstSkipped == nil { state.firstSkipped = number }
            }
            sink.deviceDidSkipFrame(cause)
            return
        }
        // Every slot held by users: the frame is lost (a sequence gap downstream).
        guard let (slot, memory) = slots.take() else { return }
        if compressed {
            memory.copyMemory(from: frame.data, byteCount: size)
        } else {
            copyPlanes(from: frame.data, stride: Int(frame.stride), into: memory)
        }
        let time: MediaTime =
            frame.has_header != 0 && frame.pts_ns > 0
            ? MediaTime(value: frame.pts_ns, timescale: 1_000_000_000) : arrival
        var buffer: PixelBuffer? = slots.lend(slot: slot, dataSize: compressed ? size : slots.layout.totalBytes)
        var captured = CapturedFrame(
            buffer: buffer!, presentationTime: time, duration: duration, sequenceNumber: number,
            hostArrivalTime: arrival)
        state.withLock { state in
            if !state.hasDelivered {
                captured.streamStartSequenceNumber = state.firstSkipped
                state.hasDelivered = true
            }
        }
        sink.deviceDidCapture(captured)
        PixelBuffer.recycle(&buffer)
    }

    /// Rows of plane 0 `stride` bytes apart (or packed when the producer says 0): the bytes a raw
    /// frame of the format needs, with PipeWire's plane order (planes follow each other, chroma
    /// rows at the stride of their plane: half of plane 0's for I420, the same for NV12).
    private func planeStrides(stride: Int) -> [Int] {
        let layout = slots.layout
        let packed = layout.planes[0].geometry.bytesPerRow
        let first = max(stride, packed)
        return layout.planes.indices.map { index in
            if index == 0 { return first }
            if format.pixelFormat == .i420 {
                return first == packed ? layout.planes[index].geometry.bytesPerRow : first / 2
            }
            return first
        }
    }

    private func minimumBytes(stride: Int) -> Int {
        let strides = planeStrides(stride: stride)
        var total = 0
        for (index, plane) in slots.layout.planes.enumerated() {
            total +=
                index == slots.layout.planes.count - 1
                ? strides[index] * (plane.geometry.height - 1) + plane.geometry.bytesPerRow
                : strides[index] * plane.geometry.height
        }
        return total
    }

    private func copyPlanes(from source: UnsafePointer<UInt8>, stride: Int, into memory: UnsafeMutableRawPointer) {
        let strides = planeStrides(stride: stride)
        var offset = 0
        for (index, plane) in slots.layout.planes.enumerated() {
            let rowBytes = plane.geometry.bytesPerRow
            let destination = memory + plane.offset
            if strides[index] == rowBytes {
                destination.copyMemory(from: source + offset, byteCount: rowBytes * plane.geometry.height)
            } else {
                for row in 0..<plane.geometry.height {
                    (destination + row * rowBytes).copyMemory(
                        from: source + offset + row * strides[index], byteCount: rowBytes)
                }
            }
            offset += strides[index] * plane.geometry.height
        }
    }
}

/// Controls: the node's PropInfo read when the node appeared (``cachedControls()``) and again by
/// ``controls()``; values from its Props, else the last value set through Viewfinder, else the
/// default; writes with `pw_node_set_param(SPA_PARAM_Props)`. Focus, exposure modes, white
/// balance, zoom, torch and anti-flicker have no SPA property: the typed camera API reports them
/// unsupported on PipeWire cameras.
extension PipeWireCameraBackend: ControllableBackend {
    package func controls() throws(CaptureError) -> [CaptureDevice.Control] {
        try refreshControls().controls
    }

    package func cachedControls() -> [CaptureDevice.Control] { controlState.withLock { $0.map.controls } }

    package func value(of id: CaptureDevice.Control.ID) throws(CaptureError) -> Int {
        let map = (try? refreshControls()) ?? controlState.withLock { $0.map }
        guard let entry = map.entry(id) else {
            throw CaptureError(.unsupportedControl, "'\(localizedName)' has no control \(id)")
        }
        if let value = entry.value { return value }
        return controlState.withLock { $0.set[entry.node.id] } ?? entry.control.defaultValue
    }

    package func setValue(_ value: Int, for id: CaptureDevice.Control.ID) throws(CaptureError) {
        guard let entry = controlState.withLock({ $0.map.entry(id) }) else {
            throw CaptureError(.unsupportedControl, "'\(localizedName)' has no control \(id)")
        }
        guard entry.control.accepts(value) else {
            throw CaptureError(
                .invalidArgument,
                "\(value) is out of range for '\(entry.control.name)' on '\(localizedName)': use \(entry.control.rangeDescription)"
            )
        }
        let (connection, nodeID) = try reachableNode("changing '\(entry.control.name)'")
        let result = connection.setNodeControl(nodeID, control: entry.node, value: value)
        guard result == 0 else {
            throw CaptureError(
                result == -ENOENT ? .deviceDisconnected : .driverError,
                "cannot set '\(entry.control.name)' of '\(localizedName)' to \(value): the PipeWire node answered \(String(cString: strerror(-result)))",
                errno: -result)
        }
        controlState.withLock { $0.set[entry.node.id] = value }
    }

    package func cameraCapabilities() -> CameraCapabilities { CameraCapabilities() }

    package func read(_ key: CameraSetting.Key) throws(CaptureError) -> CameraSetting {
        throw CaptureError(.unsupportedControl, "'\(localizedName)' (a PipeWire camera) has no \(key) control")
    }

    package func apply(_ setting: CameraSetting) throws(CaptureError) {
        throw CaptureError(.unsupportedControl, "'\(localizedName)' (a PipeWire camera) has no \(setting.key) control")
    }

    /// The connection and node ID to reach the node through now.
    private func reachableNode(_ action: String) throws(CaptureError) -> (PipeWireConnection, UInt32) {
        let (nodeID, isConnected) = node.withLock { ($0.id, $0.isConnected) }
        guard isConnected, let connection = connection.withLock({ $0 }) else {
            throw CaptureError(
                .deviceDisconnected,
                "\(action) on '\(localizedName)' failed: its PipeWire node is gone; reconnect the camera")
        }
        guard !connection.isCallerOnLoopThread else {
            throw CaptureError(
                .invalidArgument,
                "\(action) on '\(localizedName)' cannot run inside a PipeWire callback (a frame or state handler): call it from another thread"
            )
        }
        return (connection, nodeID)
    }

    /// Reads the node's controls again (new ranges, current values) and caches them.
    private func refreshControls() throws(CaptureError) -> PipeWireControlMap {
        let (connection, nodeID) = try reachableNode("reading the controls")
        guard let controls = connection.nodeControls(nodeID) else {
            throw CaptureError(
                .ioError, "cannot read the controls of '\(localizedName)': its PipeWire node did not answer")
        }
        let map = PipeWireControlMap(controls)
        controlState.withLock { $0.map = map }
        return map
    }
}
