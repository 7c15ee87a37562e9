import CPipeWire
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// A PipeWire camera node this process publishes (`media.class` `Video/Source`, `media.role`
/// `Camera`): a driver `pw_stream` whose frames `fill` draws, stamped with a `spa_meta_header`
/// (the frame's sequence number and `CLOCK_MONOTONIC` time). Paced, a timer on PipeWire's loop
/// produces a frame every frame interval; unpaced, each ``push()`` produces one. A frame for
/// which no buffer is free is skipped, and its sequence number with it (consumers see a gap).
///
/// The test producer (`viewfinder-pipewire-probe produce`) and the virtual camera output are
/// built on it.
///
/// Thread safety: all members may be used from any thread; `fill` runs on PipeWire's loop
/// thread (paced) or the pushing thread, one call at a time.
package final class PipeWireProducer: @unchecked Sendable {  // unchecked: the handle is used under the loop's lock.
    /// Draws frame `sequenceNumber` into `buffer` (raw formats: a buffer over PipeWire's memory in
    /// the node's layout) and returns the bytes written; for Motion-JPEG, `buffer` is the raw
    /// memory (`capacity` bytes) the JPEG goes into.
    package enum Target {
        /// A raw frame: draw into the buffer; it is the whole frame.
        case raw(PixelBuffer)
        /// A compressed frame: write at most `capacity` bytes at `memory`, return how many.
        case compressed(memory: UnsafeMutableRawPointer, capacity: Int)
    }

    private final class Box: @unchecked Sendable {  // unchecked: called one at a time by the shim.
        let fill: (Target, UInt64) -> Int
        let layout: PlaneLayout
        let isCompressed: Bool
        init(fill: @escaping (Target, UInt64) -> Int, layout: PlaneLayout, isCompressed: Bool) {
            self.fill = fill
            self.layout = layout
            self.isCompressed = isCompressed
        }
    }

    private let connection: PipeWireConnection
    private let handle: OpaquePointer
    private let box: Unmanaged<Box>
    private let closed = Atomic<Bool>(false)
    /// The format the node offers.
    package let format: CaptureDevice.Format

    /// Publishes node `name` (shown as `description`) offering exactly `format` at its fastest
    /// rate, through `connection`; with `formatDelayMilliseconds` > 0 the node first appears
    /// offering nothing and offers `format` that much later, as a slow producer does.
    package init(
        connection: PipeWireConnection, name: String, description: String, format: CaptureDevice.Format,
        paced: Bool = true, formatDelayMilliseconds: Int = 0, fill: @escaping (Target, UInt64) -> Int
    ) throws(CaptureError) {
        self.connection = connection
        self.format = format
        let layout = PlaneLayout(
            pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight,
            planeAlignment: 1)
        let box = Unmanaged.passRetained(Box(fill: fill, layout: layout, isCompressed: format.pixelFormat.isCompressed))
        var request = PipeWireFormat.request(for: format, frameDuration: format.minFrameDuration)
        var message = [CChar](repeating: 0, count: 256)
        let fillFunction: vf_pw_fill_fn = { user, data, capacity, _, sequence in
            let box = Unmanaged<Box>.fromOpaque(user!).takeUnretainedValue()
            guard let data else { return 0 }
            if box.isCompressed {
                let written = box.fill(
                    .compressed(memory: UnsafeMutableRawPointer(data), capacity: Int(capacity)), sequence)
                return UInt32(clamping: max(0, min(written, Int(capacity))))
            }
            guard Int(capacity) >= box.layout.totalBytes else { return 0 }
            let buffer = PixelBuffer(memory: UnsafeMutableRawPointer(data), layout: box.layout, owner: nil, slot: 0)
            _ = box.fill(.raw(buffer), sequence)
            return UInt32(box.layout.totalBytes)
        }
        guard
            let handle = vf_pw_producer_open(
                connection.handle, name, description, &request, paced ? 1 : 0, Int32(clamping: formatDelayMilliseconds),
                fillFunction, box.toOpaque(), &message, message.count)
        else {
            box.release()
            throw CaptureError(.ioError, "cannot publish PipeWire node '\(name)': \(PipeWireConnection.text(message))")
        }
        self.handle = handle
        self.box = box
    }

    /// Produces one frame now (unpaced producers). Returns whether a buffer was free; `false` also
    /// when no consumer is streaming yet.
    @discardableResult
    package func push() -> Bool { vf_pw_producer_push(handle) == 1 }

    /// Frames produced and skipped so far, and whether the node is streaming (linked to a consumer).
    package var counts: (produced: UInt64, skipped: UInt64, isStreaming: Bool) {
        var produced: UInt64 = 0
        var skipped: UInt64 = 0
        var streaming: Int32 = 0
        vf_pw_producer_counts(handle, &produced, &skipped, &streaming)
        return (produced, skipped, streaming != 0)
    }

    /// A control the node publishes (a PropInfo param, its value in the node's Props).
    package struct Control: Sendable {
        /// What values it takes.
        package enum Kind: Sendable {
            /// `minimum`…`maximum` on `step`.
            case integer(minimum: Int32, maximum: Int32, step: Int32)
            /// 0 or 1.
            case boolean
            /// One of the items (value, label).
            case menu([(value: Int32, name: String)])
            /// `minimum`…`maximum`, floating point (as libcamera's nodes have): the control's
            /// default and value are then `floatDefault` and `floatValue`.
            case float(minimum: Double, maximum: Double)
        }
        /// Its SPA property ID (``brightnessID`` …, or ``customID`` and up).
        package var id: UInt32
        package var name: String
        package var kind: Kind
        package var defaultValue: Int32
        /// Its value at first.
        package var value: Int32
        /// A floating-point control's default and first value.
        package var floatDefault: Double
        package var floatValue: Double

        package init(id: UInt32, name: String, kind: Kind, defaultValue: Int32, value: Int32? = nil) {
            self.id = id
            self.name = name
            self.kind = kind
            self.defaultValue = defaultValue
            self.value = value ?? defaultValue
            self.floatDefault = Double(defaultValue)
            self.floatValue = Double(value ?? defaultValue)
        }

        /// A floating-point control from `minimum` to `maximum`.
        package init(
            id: UInt32, name: String, minimum: Double, maximum: Double, defaultValue: Double, value: Double? = nil
        ) {
            self.init(id: id, name: name, kind: .float(minimum: minimum, maximum: maximum), defaultValue: 0)
            self.floatDefault = defaultValue
            self.floatValue = value ?? defaultValue
        }

        /// `SPA_PROP_brightness`, `SPA_PROP_contrast`, `SPA_PROP_saturation`, `SPA_PROP_gain`,
        /// `SPA_PROP_exposure`, and the first of a node's own (`SPA_PROP_START_CUSTOM`).
        package static let brightnessID = UInt32(VF_PW_PROP_BRIGHTNESS)
        package static let contrastID = UInt32(VF_PW_PROP_CONTRAST)
        package static let saturationID = UInt32(VF_PW_PROP_SATURATION)
        package static let gainID = UInt32(VF_PW_PROP_GAIN)
        package static let exposureID = UInt32(VF_PW_PROP_EXPOSURE)
        package static let customID = UInt32(VF_PW_PROP_START_CUSTOM)

        /// The shim's description of it.
        package var shim: vf_pw_control {
            var control = vf_pw_control()
            control.id = id
            withUnsafeMutableBytes(of: &control.name) { raw in
                let bytes = Array(name.utf8.prefix(raw.count - 1))
                raw.copyBytes(from: bytes + [0])
            }
            control.default_value = defaultValue
            control.value = value
            control.has_value = 1
            switch kind {
            case .integer(let minimum, let maximum, let step):
                control.kind = UInt32(VF_PW_CONTROL_INT)
                (control.minimum, control.maximum, control.step) = (minimum, maximum, step)
            case .float(let minimum, let maximum):
                control.kind = UInt32(VF_PW_CONTROL_FLOAT)
                (control.float_minimum, control.float_maximum) = (minimum, maximum)
                (control.float_default, control.float_value) = (floatDefault, floatValue)
            case .boolean:
                control.kind = UInt32(VF_PW_CONTROL_BOOL)
                (control.minimum, control.maximum, control.step) = (0, 1, 1)
            case .menu(let items):
                control.kind = UInt32(VF_PW_CONTROL_MENU)
                let items = items.prefix(Int(VF_PW_MAX_MENU))
                control.menu_count = UInt32(items.count)
                control.minimum = items.map(\.value).min() ?? 0
                control.maximum = items.map(\.value).max() ?? 0
                control.step = 1
                withUnsafeMutableBytes(of: &control.menu_values) { raw in
                    for (index, item) in items.enumerated() {
                        raw.storeBytes(of: item.value, toByteOffset: index * 4, as: Int32.self)
                    }
                }
                withUnsafeMutableBytes(of: &control.menu_names) { raw in
                    let stride = raw.count / Int(VF_PW_MAX_MENU)
                    for (index, item) in items.enumerated() {
                        let bytes = Array(item.name.utf8.prefix(stride - 1)) + [0]
                        UnsafeMutableRawBufferPointer(rebasing: raw[(index * stride)..<(index * stride + bytes.count)])
                            .copyBytes(from: bytes)
                    }
                }
            }
            return control
        }
    }

    /// Publishes `controls` on the node (replacing any before): consumers see them in its
    /// PropInfo and (`showingValues`) their values in its Props, and set them with
    /// `pw_node_set_param(Props)`. Without `showingValues` the Props carry no control values, as
    /// PipeWire's V4L2 plugin's do.
    package func publish(controls: [Control], showingValues: Bool = true) throws(CaptureError) {
        let shim = controls.map(\.shim)
        let result = vf_pw_producer_set_controls(handle, shim, Int32(shim.count), showingValues ? 1 : 0)
        guard result >= 0 else {
            throw CaptureError(
                .invalidArgument,
                "cannot publish \(controls.count) controls: \(String(cString: strerror(-result))) (at most \(VF_PW_MAX_CONTROLS), menus of at most \(VF_PW_MAX_MENU) items)",
                errno: -result)
        }
    }

    /// The value control `id` has now (as consumers last set it), or `nil` without such a control.
    package func value(ofControl id: UInt32) -> Int32? {
        var value: Int32 = 0
        return vf_pw_producer_control_value(handle, id, &value, nil) == 1 ? value : nil
    }

    /// The value floating-point control `id` has now, or `nil` without such a control.
    package func floatValue(ofControl id: UInt32) -> Double? {
        var value = 0.0
        return vf_pw_producer_control_value(handle, id, nil, &value) == 1 ? value : nil
    }

    /// Removes the node. Called by `deinit` too.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        nonisolated(unsafe) let handle = handle
        let box = box
        let connection = connection
        PipeWireConnection.offLoopThread(connection.handle) {
            withExtendedLifetime(connection) { vf_pw_producer_close(handle) }
            box.release()
        }
    }

    deinit { close() }
}
