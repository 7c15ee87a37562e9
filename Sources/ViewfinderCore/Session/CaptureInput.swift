import Synchronization

/// A source of media for a session (the counterpart of `AVCaptureInput`). Use its concrete
/// subclass ``CaptureDeviceInput``.
///
/// Thread safety: may be used from any thread.
public class CaptureInput: @unchecked Sendable {  // unchecked: `ports` is set once in init; ports are Sendable.
    /// The streams the input provides, one per media type its source produces.
    public private(set) var ports: [Port] = []

    package init(mediaTypes: [MediaType]) {
        ports = mediaTypes.map { Port(mediaType: $0, input: self) }
    }

    /// The port carrying `mediaType`, if the input has one.
    package func port(for mediaType: MediaType) -> Port? { ports.first { $0.mediaType == mediaType } }

    /// One stream of an input (the counterpart of `AVCaptureInput.Port`).
    public final class Port: Sendable {
        /// The media the port carries.
        public let mediaType: MediaType
        private let enabled = Atomic<Bool>(true)
        private let owner: WeakReference<CaptureInput>

        package init(mediaType: MediaType, input: CaptureInput) {
            self.mediaType = mediaType
            self.owner = WeakReference(input)
        }

        /// The input the port belongs to.
        public var input: CaptureInput? { owner.value }

        /// Whether the port's media flows into its connections. Turning it off pauses every
        /// connection drawing on the port from the next sample (those samples are not counted as
        /// captured by the outputs, and resuming is no gap), as a connection's own `isEnabled` does.
        public var isEnabled: Bool {
            get { enabled.load(ordering: .relaxed) }
            set { enabled.store(newValue, ordering: .relaxed) }
        }
    }
}

/// An input that captures from a ``CaptureDevice`` (the counterpart of `AVCaptureDeviceInput`).
///
/// ```swift
/// guard let camera = CaptureDevice.default(for: .video) else { return }
/// let input = try CaptureDeviceInput(device: camera)
/// if session.canAddInput(input) { try session.tryAddInput(input) }
/// ```
public final class CaptureDeviceInput: CaptureInput, @unchecked Sendable {  // unchecked: immutable.
    /// The device frames come from.
    public let device: CaptureDevice
    /// AVFoundation's settings that change nothing on Linux (`Porting/CaptureInput+AVFoundation.swift`).
    package let porting = DeviceInputPorting()

    /// An input for `device`. Throws ``CaptureError/Code/deviceNotFound`` when the device is
    /// unknown or no longer connected, and ``CaptureError/Code/permissionDenied`` (saying what to
    /// do) for a camera this process may not open: one listed although its node refused
    /// permission, with ``CaptureDevice/authorizationStatus(for:)``
    /// ``CaptureDevice/AuthorizationStatus/denied``.
    public init(device: CaptureDevice) throws(CaptureError) {
        guard device.isConnected else {
            throw CaptureError(
                .deviceNotFound,
                "'\(device.localizedName)' (\(device.uniqueID)) is not connected: plug it in, or pick one of CaptureDevice.devices(for: .video)"
            )
        }
        // Listed, but this process may not open it (the user is not in the `video` group): the
        // refusal, with its fix, as AVFoundation refuses an input for an unauthorized camera.
        if let refusal = (device.backend as? any AccessRefusingBackend)?.accessRefusal { throw refusal }
        self.device = device
        super.init(mediaTypes: device.mediaTypes)
    }

    /// An input for the device with `uniqueID`; throws ``CaptureError/Code/deviceNotFound`` when
    /// no such device is present.
    public convenience init(deviceWithUniqueID uniqueID: String) throws(CaptureError) {
        guard let device = CaptureDevice.device(withUniqueID: uniqueID) else {
            let known = CaptureDevice.devices(for: .video).map(\.uniqueID).joined(separator: ", ")
            throw CaptureError(
                .deviceNotFound, "no device with unique ID '\(uniqueID)': present are \(known.isEmpty ? "none" : known)"
            )
        }
        try self.init(device: device)
    }
}
