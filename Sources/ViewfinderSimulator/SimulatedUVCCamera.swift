import CV4L2
import Foundation
import Synchronization
import Viewfinder

/// An in-process USB webcam that behaves as the V4L2 specification and the `uvcvideo` driver do,
/// for running Viewfinder's real V4L2 backend without hardware. Plug it into a
/// ``SimulatedV4L2Bus``; the backend then discovers, configures and streams from it through the
/// same calls it makes to a kernel driver.
///
/// It takes its formats, sizes and frame intervals from a `v4l2-ctl --list-formats-ext` listing
/// (``c920Listing`` is one) and models: capabilities (a capture node plus a metadata node, as
/// UVC cameras have); format and interval adjustment in `S_FMT` / `S_PARM`; the buffer queue
/// with real allocated memory that stays valid while mapped; `poll` readiness and `EAGAIN`;
/// sequence numbers that skip when no buffer was queued; error flags and empty buffers on
/// request; UVC-style controls; unplugging (`ENODEV` on every call); `EACCES`, `EBUSY`, `EIO`
/// and `EINVAL` on request.
///
/// Frames are paced by an injected `CaptureClock`: frame *k* of a stream is due one frame
/// interval after frame *k − 1*, the first one interval after `STREAMON`, so with a
/// `ManualClock` a test gets exactly the frames whose time it has advanced to. Raw frames show
/// the `TestPattern` with their sequence number; MJPEG frames are real JPEG images of it (4:2:2,
/// quality 85, full range as JFIF means, encoded per frame with libjpeg-turbo).
///
/// ```swift
/// let bus = SimulatedV4L2Bus()
/// let camera = try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing))
/// bus.plug(camera)
/// let device = bus.device(for: camera)!   // a CaptureDevice backed by the V4L2 backend
/// ```
///
/// Thread safety: all members may be used from any thread.
public final class SimulatedUVCCamera: Sendable {
    /// How the camera behaves.
    public struct Configuration: Sendable {
        /// The format listing (`v4l2-ctl --list-formats-ext` output).
        public var listing: String
        /// The card name (default: the listing's `Card type`, else "Simulated UVC Camera").
        public var card: String?
        /// The driver name (default: the listing's `Driver name`, else "uvcvideo").
        public var driver: String?
        /// The bus info, which makes the unique ID (default: the listing's `Bus info`, else a
        /// made-up USB port unique to this camera).
        public var busInfo: String?
        /// The clock that paces frames and stamps them.
        public var clock: any CaptureClock
        /// Offer libv4l2's emulated raw format (I420, flagged emulated) at every size of the
        /// compressed formats, as libv4l2 does for MJPEG cameras.
        public var emulatesRawFormats: Bool
        /// Whether the camera has an LED (torch) control.
        public var hasTorch: Bool
        /// Row alignment in bytes of raw formats: `bytesperline` is the packed row rounded up
        /// to this (1: tightly packed).
        public var bytesPerLineAlignment: Int
        /// The USB serial number sysfs shows when the camera is plugged at a ``SimulatedUSBPort``
        /// (`nil`: a camera without one, as many cheap webcams are).
        public var serialNumber: String?
        /// The USB vendor and product IDs at a port (four hex digits; default a made-up pair).
        public var vendorID: String?
        /// The USB product ID at a port.
        public var productID: String?
        /// The camera's own clock, read through its metadata node (`nil`: the metadata node
        /// streams nothing, and the driver's timestamps carry no jitter).
        public var deviceClock: DeviceClock?
        /// Whether the camera has uvcvideo's "Exposure, Dynamic Framerate" control
        /// (`V4L2_CID_EXPOSURE_AUTO_PRIORITY`, off by default), as a real C920 does.
        public var hasDynamicFramerate = false

        /// A configuration from a format listing; every other parameter has a default.
        public init(
            listing: String, card: String? = nil, driver: String? = nil, busInfo: String? = nil,
            clock: any CaptureClock = HostClock(), emulatesRawFormats: Bool = false, hasTorch: Bool = false,
            bytesPerLineAlignment: Int = 1, serialNumber: String? = nil, vendorID: String? = nil,
            productID: String? = nil, deviceClock: DeviceClock? = nil
        ) {
            self.listing = listing
            self.card = card
            self.driver = driver
            self.busInfo = busInfo
            self.clock = clock
            self.emulatesRawFormats = emulatesRawFormats
            self.hasTorch = hasTorch
            self.bytesPerLineAlignment = max(1, bytesPerLineAlignment)
            self.serialNumber = serialNumber
            self.vendorID = vendorID
            self.productID = productID
            self.deviceClock = deviceClock
        }

        /// As ``init(listing:card:driver:busInfo:clock:emulatesRawFormats:hasTorch:bytesPerLineAlignment:serialNumber:vendorID:productID:deviceClock:)``,
        /// with ``hasDynamicFramerate``.
        public init(
            listing: String, card: String? = nil, clock: any CaptureClock = HostClock(), vendorID: String?,
            productID: String?, hasDynamicFramerate: Bool
        ) {
            self.init(listing: listing, card: card, clock: clock, vendorID: vendorID, productID: productID)
            self.hasDynamicFramerate = hasDynamicFramerate
        }
    }

    /// A fault applied to the next frame the camera captures.
    public enum FrameFault: Sendable, Hashable {
        /// The buffer comes back with `V4L2_BUF_FLAG_ERROR` (a damaged USB transfer).
        case errorFlag
        /// The buffer comes back with no data (`bytesused` 0).
        case emptyPayload
        /// The buffer comes back with half a frame.
        case shortPayload
        /// The buffer claims more bytes (`bytesused`) than it maps.
        case oversizedPayload
        /// This frame and every later one are stamped `step` later (a negative step: earlier), as
        /// a driver whose clock jumps does.
        case timestampStep(MediaTime)
        /// The driver's sequence counter jumps by `step` (negative: back) from this frame on,
        /// modulo 2^32 as the 32-bit field wraps.
        case sequenceStep(Int64)
    }

    /// The card name.
    public let card: String
    /// The driver name.
    public let driver: String
    /// The bus info `VIDIOC_QUERYCAP` reports: the port's (`usb-0000:00:14.0-2`) while plugged at
    /// a ``SimulatedUSBPort``, else the configured one.
    public var busInfo: String { state.withLock { $0.usb?.busInfo } ?? configuredBusInfo }
    let configuredBusInfo: String
    let configuration: Configuration
    let listing: V4L2FormatListing

    private static let serial = Atomic<Int>(0)

    /// A camera as `configuration` describes. Throws `CaptureError.Code.invalidArgument` when
    /// the listing cannot be read.
    public init(configuration: Configuration) throws(CaptureError) {
        var listing = try V4L2FormatListing.parse(configuration.listing)
        if configuration.emulatesRawFormats {
            for format in listing.formats where format.isCompressed {
                listing.formats.append(
                    .init(
                        fourCC: VF_V4L2_PIX_FMT_YUV420, description: "Planar YUV 4:2:0, emulated", isCompressed: false,
                        isEmulated: true, sizes: format.sizes))
            }
        }
        self.configuration = configuration
        self.listing = listing
        card = configuration.card ?? listing.card ?? "Simulated UVC Camera"
        driver = configuration.driver ?? listing.driver ?? "uvcvideo"
        configuredBusInfo =
            configuration.busInfo ?? listing.busInfo
            ?? "usb-0000:00:14.0-\(Self.serial.add(1, ordering: .relaxed).newValue)"
        state = Mutex(
            State(
                controls: Self.defaultControls(
                    torch: configuration.hasTorch, dynamicFramerate: configuration.hasDynamicFramerate)))
        state.withLock { $0.resetFormat(listing: listing, alignment: configuration.bytesPerLineAlignment) }
    }

    // MARK: State

    struct Buffer {
        enum Phase { case dequeued, queued, done }
        var memory: SimulatedBufferMemory
        var phase = Phase.dequeued
        var bytesUsed: UInt32 = 0
        var flags: UInt32 = 0
        var sequence: UInt32 = 0
        var timestamp = MediaTime.zero
        var renderedSequence: UInt64?
    }

    struct Control {
        var id: UInt32
        var name: String
        var type: UInt32
        var minimum: Int32
        var maximum: Int32
        var step: Int32
        var defaultValue: Int32
        var value: Int32
        var menu: [Int32: String] = [:]
        /// The automatic control that, when it is on, makes this one inactive.
        var master: (id: UInt32, manualValue: Int32)?
    }

    // unchecked: holds buffer memory objects, only touched under the camera's lock.
    struct State: @unchecked Sendable {
        var connected = false
        var generation = 0
        /// Open descriptors: the generation they were opened in and whether they are the metadata node.
        var handles: [Int32: (generation: Int, isMetadata: Bool, nonBlocking: Bool)] = [:]
        var owner: Int32?
        var fourCC: UInt32 = 0
        var width: UInt32 = 0
        var height: UInt32 = 0
        var bytesPerLine: UInt32 = 0
        var sizeImage: UInt32 = 0
        var interval = V4L2FormatListing.Fraction(numerator: 1, denominator: 30)
        var buffers: [Buffer] = []
        var queued: [Int] = []
        var done: [Int] = []
        var streaming = false
        var streamStart = MediaTime.zero
        var nextFrame: Int64 = 0
        var sequence: UInt32 = 0
        var faults: [FrameFault] = []
        /// The metadata node's queue (``DeviceClock``) and the faults its next buffers get.
        var metadataBuffers: [Buffer] = []
        var metadataQueued: [Int] = []
        var metadataDone: [Int] = []
        var metadataOwner: Int32?
        var metadataStreaming = false
        var metadataFilled = 0
        var metadataFaults: [MetadataFault] = []
        /// Added to every frame's timestamp and sequence number (``FrameFault/timestampStep(_:)``,
        /// ``FrameFault/sequenceStep(_:)``).
        var timestampOffset = MediaTime.zero
        var sequenceOffset: UInt32 = 0
        var pendingIOError = false
        var openError: Int32?
        var busyElsewhere = false
        var refusedFourCCs: Set<UInt32> = []
        var controls: [Control]
        var framesCaptured = 0
        var framesLost = 0
        var lastFrameInterval: V4L2FormatListing.Fraction?
        /// Motion-JPEG frames: the pattern they are encoded from (and the sequence number it
        /// shows), and the encoder.
        var jpegSource: PixelBuffer?
        var jpegSourceSequence: UInt64?
        var jpegEncoder: JPEGEncoder?
        /// Where the camera is plugged in, when at a ``SimulatedUSBPort``.
        var usb: SimulatedUSBAttachment?

        init(controls: [Control]) {
            self.controls = controls
        }

        mutating func resetFormat(listing: V4L2FormatListing, alignment: Int) {
            let first = listing.formats[0]
            fourCC = first.fourCC
            if case .discrete(let w, let h) = first.sizes.first?.size {
                (width, height) = (w, h)
            } else if case .stepwise(let w, let h, _, _, _, _) = first.sizes.first?.size {
                (width, height) = (w, h)
            }
            computeSizes(listing: listing, alignment: alignment)
            if case .discrete(let intervals) = first.sizes.first?.intervals, let fastest = intervals.first {
                interval = fastest
            }
        }

        mutating func computeSizes(listing: V4L2FormatListing, alignment: Int) {
            if let format = V4L2FourCC.pixelFormat(fourCC), !format.isCompressed {
                let packed = format.planeGeometry(0, width: Int(width), height: Int(height)).bytesPerRow
                let aligned = (packed + alignment - 1) / alignment * alignment
                bytesPerLine = UInt32(aligned)
                sizeImage = UInt32(
                    PlaneLayout(pixelFormat: format, width: Int(width), height: Int(height), bytesPerRow: aligned)
                        .totalBytes)
            } else {
                bytesPerLine = 0
                sizeImage = width * height * 2
            }
        }
    }

    let state: Mutex<State>
    private let changed = NSCondition()

    /// Wakes ``waitUntil(timeout:_:)``; called after every call that may change the camera's state.
    func noteChange() {
        changed.lock()
        changed.broadcast()
        changed.unlock()
    }

    /// Waits until `condition` holds for the camera (checked after each driver call), for at most
    /// `timeout` seconds of real time. Returns whether it held. For tests: wait on the driver's
    /// progress instead of sleeping.
    public func waitUntil(timeout: Double, _ condition: (SimulatedUVCCamera) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        changed.lock()
        defer { changed.unlock() }
        while !condition(self) {
            if !changed.wait(until: deadline) { return condition(self) }
        }
        return true
    }

    static func defaultControls(torch: Bool, dynamicFramerate: Bool = false) -> [Control] {
        var controls = [
            Control(
                id: VF_V4L2_CID_BRIGHTNESS, name: "Brightness", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 0,
                maximum: 255, step: 1, defaultValue: 128, value: 128),
            Control(
                id: VF_V4L2_CID_CONTRAST, name: "Contrast", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 0, maximum: 255,
                step: 1, defaultValue: 128, value: 128),
            Control(
                id: VF_V4L2_CID_GAIN, name: "Gain", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 0, maximum: 255,
                step: 1, defaultValue: 0, value: 0),
            Control(
                id: VF_V4L2_CID_SATURATION, name: "Saturation", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 0,
                maximum: 255, step: 1, defaultValue: 128, value: 128),
            Control(
                id: VF_V4L2_CID_AUTO_WHITE_BALANCE, name: "White Balance, Automatic", type: VF_V4L2_CTRL_TYPE_BOOLEAN,
                minimum: 0, maximum: 1, step: 1, defaultValue: 1, value: 1),
            Control(
                id: VF_V4L2_CID_POWER_LINE_FREQUENCY, name: "Power Line Frequency", type: VF_V4L2_CTRL_TYPE_MENU,
                minimum: 0, maximum: 2, step: 1, defaultValue: 2, value: 2,
                menu: [0: "Disabled", 1: "50 Hz", 2: "60 Hz"]),
            Control(
                id: VF_V4L2_CID_WHITE_BALANCE_TEMPERATURE, name: "White Balance Temperature",
                type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 2000, maximum: 6500, step: 1, defaultValue: 4000, value: 4000,
                master: (VF_V4L2_CID_AUTO_WHITE_BALANCE, 0)),
            // uvcvideo offers manual and aperture priority, not full auto: a gap in the menu.
            Control(
                id: VF_V4L2_CID_EXPOSURE_AUTO, name: "Auto Exposure", type: VF_V4L2_CTRL_TYPE_MENU, minimum: 0,
                maximum: 3, step: 1, defaultValue: 3, value: 3, menu: [1: "Manual Mode", 3: "Aperture Priority Mode"]),
            Control(
                id: VF_V4L2_CID_EXPOSURE_ABSOLUTE, name: "Exposure Time, Absolute", type: VF_V4L2_CTRL_TYPE_INTEGER,
                minimum: 3, maximum: 2047, step: 1, defaultValue: 250, value: 250,
                master: (VF_V4L2_CID_EXPOSURE_AUTO, VF_V4L2_EXPOSURE_MANUAL)),
            Control(
                id: VF_V4L2_CID_FOCUS_ABSOLUTE, name: "Focus, Absolute", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 0,
                maximum: 250, step: 5, defaultValue: 0, value: 0, master: (VF_V4L2_CID_FOCUS_AUTO, 0)),
            Control(
                id: VF_V4L2_CID_FOCUS_AUTO, name: "Focus, Automatic Continuous", type: VF_V4L2_CTRL_TYPE_BOOLEAN,
                minimum: 0, maximum: 1, step: 1, defaultValue: 1, value: 1),
            Control(
                id: VF_V4L2_CID_ZOOM_ABSOLUTE, name: "Zoom, Absolute", type: VF_V4L2_CTRL_TYPE_INTEGER, minimum: 100,
                maximum: 500, step: 1, defaultValue: 100, value: 100),
        ]
        if dynamicFramerate {
            controls.append(
                Control(
                    id: VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY, name: "Exposure, Dynamic Framerate",
                    type: VF_V4L2_CTRL_TYPE_BOOLEAN, minimum: 0, maximum: 1, step: 1, defaultValue: 0, value: 0))
        }
        if torch {
            controls.append(
                Control(
                    id: VF_V4L2_CID_FLASH_LED_MODE, name: "LED Mode", type: VF_V4L2_CTRL_TYPE_MENU, minimum: 0,
                    maximum: 2, step: 1, defaultValue: 0, value: 0, menu: [0: "Off", 1: "Flash", 2: "Torch"]))
        }
        return controls.sorted { $0.id < $1.id }
    }

    // MARK: Test controls

    /// The value control `id` (`V4L2_CID_*`) holds in the driver now; `nil` if the camera has no
    /// such control.
    public func controlValue(_ id: UInt32) -> Int32? {
        state.withLock { state in state.controls.first { $0.id == id }?.value }
    }

    /// Whether the camera is plugged in.
    public var isPluggedIn: Bool { state.withLock { $0.connected } }

    /// Frames the camera captured into a buffer in its current or last stream.
    public var framesCaptured: Int { state.withLock { $0.framesCaptured } }

    /// Frames the camera lost because no buffer was queued (the sequence number skipped them).
    public var framesLost: Int { state.withLock { $0.framesLost } }

    /// Whether a stream is on.
    public var isStreaming: Bool { state.withLock { $0.streaming } }

    /// Descriptors open on the camera's nodes.
    public var openDescriptorCount: Int { state.withLock { $0.handles.count } }

    /// Buffers queued to the camera and not yet filled.
    public var queuedBufferCount: Int { state.withLock { $0.queued.count } }

    /// Buffers the application has requested.
    public var allocatedBufferCount: Int { state.withLock { $0.buffers.count } }

    /// The frame interval of the current format, as the last `S_PARM` (or the default) left it.
    public var frameInterval: MediaTime {
        state.withLock { V4L2FourCC.time(numerator: $0.interval.numerator, denominator: $0.interval.denominator) }
    }

    /// Makes the next frames fail as listed, one fault per frame.
    public func injectFrameFaults(_ faults: [FrameFault]) {
        state.withLock { $0.faults.append(contentsOf: faults) }
    }

    /// Makes opening the camera fail with `errno` (`EACCES`: the user is not in the `video`
    /// group), or succeed again with `nil`.
    public func setOpenError(_ errno: Int32?) {
        state.withLock { $0.openError = errno }
    }

    /// Pretends another program streams from the camera: setting a format or requesting
    /// buffers fails with `EBUSY`.
    public func setInUseByAnotherProgram(_ busy: Bool) {
        state.withLock { $0.busyElsewhere = busy }
    }

    /// Makes `S_FMT` refuse the formats with these FourCCs (`"YUYV"`) with `EINVAL`.
    public func refuseFormats(_ fourCCs: [String]) {
        state.withLock { $0.refusedFourCCs = Set(fourCCs.compactMap(V4L2FourCC.code)) }
    }

    /// Makes the next `DQBUF` fail with `EIO`, as a failed USB transfer does.
    public func injectIOError() {
        state.withLock { $0.pendingIOError = true }
    }

    // MARK: Plugging

    /// Called by the bus: the camera is attached (again), fresh as after power-up. Returns `false`,
    /// changing nothing, when it is plugged in already (descriptors open on it keep their state).
    func plugIn() -> Bool {
        state.withLock { state in
            guard !state.connected else { return false }
            var fresh = State(
                controls: Self.defaultControls(
                    torch: configuration.hasTorch, dynamicFramerate: configuration.hasDynamicFramerate))
            fresh.handles = state.handles
            fresh.generation = state.generation
            // What tests set up about the environment survives replugging.
            fresh.openError = state.openError
            fresh.busyElsewhere = state.busyElsewhere
            fresh.refusedFourCCs = state.refusedFourCCs
            state = fresh
            state.resetFormat(listing: listing, alignment: configuration.bytesPerLineAlignment)
            state.connected = true
            return true
        }
    }

    /// Called by the bus: the camera is gone; every open descriptor now fails with `ENODEV`.
    /// Mapped buffer memory stays valid until unmapped.
    func unplug() {
        state.withLock { state in
            releaseBandwidth(state)
            state.usb = nil
            state.connected = false
            state.generation += 1
            state.streaming = false
            state.buffers = []
            state.queued = []
            state.done = []
            state.owner = nil
            state.metadataStreaming = false
            state.metadataBuffers = []
            state.metadataQueued = []
            state.metadataDone = []
            state.metadataOwner = nil
        }
        noteChange()
    }
}
