import Foundation

// `AVCaptureDepthDataOutput` (no Linux camera delivers depth: a session refuses the output, as
// AVFoundation's does on a device without depth), the rest of `AVCaptureVideoPreviewLayer`
// (orientation and mirroring through its connection), of `AVCaptureStillImageOutput` (bracketed
// stills, not supported), `AVCaptureInput.Port`'s format and the media types.

/// Depth data (`AVDepthData`): never made on Linux (no depth cameras); the type exists for
/// delegate signatures.
///
/// Thread safety: immutable; freely sendable.
public final class DepthData: Sendable {
    private init() {}
}

/// An output of depth maps (`AVCaptureDepthDataOutput`). No Linux camera delivers depth
/// (``CaptureDevice/Format/supportedDepthDataFormats`` is empty), so a session's
/// ``CaptureSession/canAddOutput(_:)`` refuses it, as AVFoundation's does on a device without
/// depth, and its delegate is never called.
///
/// Thread safety: may be used from any thread.
public final class CaptureDepthDataOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state under `lock`.
    private let lock = NSLock()
    private weak var storedDelegate: (any CaptureDepthDataOutputDelegate)?
    private var queue: DispatchQueue?
    private var discardsLate = true
    private var filtering = true

    /// A depth output.
    public override init() { super.init() }

    /// Sets the delegate (held weakly) and the queue it would be called on.
    public func setDelegate(_ delegate: (any CaptureDepthDataOutputDelegate)?, callbackQueue: DispatchQueue?) {
        lock.withLock {
            storedDelegate = delegate
            queue = callbackQueue
        }
    }
    /// The delegate.
    public var delegate: (any CaptureDepthDataOutputDelegate)? { lock.withLock { storedDelegate } }
    /// The delegate's queue.
    public var delegateCallbackQueue: DispatchQueue? { lock.withLock { queue } }
    /// Whether late depth maps are dropped (default `true`). Kept.
    public var alwaysDiscardsLateDepthData: Bool {
        get { lock.withLock { discardsLate } }
        set { lock.withLock { discardsLate = newValue } }
    }
    /// Whether depth maps are filtered (default `true`). Kept.
    public var isFilteringEnabled: Bool {
        get { lock.withLock { filtering } }
        set { lock.withLock { filtering = newValue } }
    }
}

/// Told of depth maps (`AVCaptureDepthDataOutputDelegate`); never called on Linux.
public protocol CaptureDepthDataOutputDelegate: AnyObject {
    /// A depth map.
    func depthDataOutput(
        _ output: CaptureDepthDataOutput, didOutput depthData: DepthData, timestamp: MediaTime,
        connection: CaptureConnection)
    /// A dropped depth map.
    func depthDataOutput(
        _ output: CaptureDepthDataOutput, didDrop depthData: DepthData, timestamp: MediaTime,
        connection: CaptureConnection, reason: CaptureOutput.DataDroppedReason)
}

extension CaptureDepthDataOutputDelegate {
    /// Does nothing.
    public func depthDataOutput(
        _ output: CaptureDepthDataOutput, didOutput depthData: DepthData, timestamp: MediaTime,
        connection: CaptureConnection
    ) {}
    /// Does nothing.
    public func depthDataOutput(
        _ output: CaptureDepthDataOutput, didDrop depthData: DepthData, timestamp: MediaTime,
        connection: CaptureConnection, reason: CaptureOutput.DataDroppedReason
    ) {}
}

extension CaptureVideoPreviewLayer {
    /// Whether the layer is showing frames: its connection is active (the session running).
    public var isPreviewing: Bool { connection?.isActive ?? false }
    /// The preview's orientation (the property before ``CaptureConnection/videoRotationAngle``):
    /// its connection's ``CaptureConnection/videoOrientation``.
    public var orientation: CaptureVideoOrientation {
        get { connection?.videoOrientation ?? .landscapeRight }
        set { connection?.videoOrientation = newValue }
    }
    /// Whether ``orientation`` can be set: the connection's ``CaptureConnection/isVideoOrientationSupported``.
    public var isOrientationSupported: Bool { connection?.isVideoOrientationSupported ?? false }
    /// Whether the preview is mirrored: its connection's ``CaptureConnection/isVideoMirrored``.
    public var isMirrored: Bool {
        get { connection?.isVideoMirrored ?? false }
        set { connection?.isVideoMirrored = newValue }
    }
    /// Whether ``isMirrored`` can be set: the connection's ``CaptureConnection/isVideoMirroringSupported``.
    public var isMirroringSupported: Bool { connection?.isVideoMirroringSupported ?? false }
    /// Whether mirroring follows the camera: the connection's
    /// ``CaptureConnection/automaticallyAdjustsVideoMirroring``.
    public var automaticallyAdjustsMirroring: Bool {
        get { connection?.automaticallyAdjustsVideoMirroring ?? false }
        set { connection?.automaticallyAdjustsVideoMirroring = newValue }
    }
}

extension CaptureStillImageOutput {
    /// Whether still-image stabilization is available: `false`.
    public var isStillImageStabilizationSupported: Bool { false }
    /// Whether stabilization is used when available: `false`; setting `true` traps (unsupported).
    public var automaticallyEnablesStillImageStabilizationWhenAvailable: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "still-image stabilization", check: "isStillImageStabilizationSupported")
        }
    }
    /// Whether stabilization is active: `false`.
    public var isStillImageStabilizationActive: Bool { false }
    /// Whether stills are at the format's highest resolution: `true` — a still is a frame of the
    /// running stream, at the format's size; setting it changes nothing.
    public var isHighResolutionStillImageOutputEnabled: Bool {
        get { true }
        set {}
    }
    /// The most stills a bracket takes: 0 (no bracketed capture).
    public var maxBracketedCaptureStillImageCount: Int { 0 }
    /// Whether the lens can be stabilized during a bracket: `false`.
    public var isLensStabilizationDuringBracketedCaptureSupported: Bool { false }
    /// Whether the lens is stabilized during a bracket: `false`; setting `true` traps.
    public var isLensStabilizationDuringBracketedCaptureEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "lens stabilization during brackets",
                check: "isLensStabilizationDuringBracketedCaptureSupported")
        }
    }

    private static var bracketError: CaptureError {
        CaptureError(
            .unsupportedFormat,
            "bracketed stills are not supported by Linux cameras (maxBracketedCaptureStillImageCount is 0): take single stills"
        )
    }

    /// Prepares a bracket: fails, calling `handler` on a global queue with `false` and
    /// ``CaptureError/Code/unsupportedFormat`` (bracketed capture is not supported).
    public func prepareToCaptureStillImageBracket(
        from connection: CaptureConnection, withSettingsArray settings: [CaptureBracketedStillImageSettings],
        completionHandler handler: @escaping (Bool, (any Error)?) -> Void
    ) {
        let box = UncheckedBox(handler)
        DispatchQueue.global().async { box.value(false, Self.bracketError) }
    }

    /// Takes a bracket: fails, calling `handler` once on a global queue with no sample and
    /// ``CaptureError/Code/unsupportedFormat``.
    public func captureStillImageBracketAsynchronously(
        from connection: CaptureConnection, withSettingsArray settings: [CaptureBracketedStillImageSettings],
        completionHandler handler: @escaping (SampleBuffer?, CaptureBracketedStillImageSettings?, (any Error)?) -> Void
    ) {
        let box = UncheckedBox(handler)
        DispatchQueue.global().async { box.value(nil, settings.first, Self.bracketError) }
    }
}

extension CaptureInput.Port {
    /// The format of the port's media: a device input's active format for video; for audio, the
    /// device's active format's PCM layout, when it has one.
    public var formatDescription: FormatDescription? {
        guard let device = (input as? CaptureDeviceInput)?.device else { return nil }
        let format = device.activeFormat
        if mediaType == .video, format.mediaType == .video { return format.formatDescription }
        if mediaType == .audio, let audio = format.audioFormat { return .audio(audio) }
        return nil
    }
}

extension MediaType {
    /// Video and audio muxed in one stream (`AVMediaType.muxed`); no Linux device produces it.
    public static let muxed = MediaType(rawValue: "muxx")
    /// Timed metadata (`AVMediaType.metadata`).
    public static let metadata = MediaType(rawValue: "meta")
    /// Depth data (`AVMediaType.depthData`); no Linux camera produces it.
    public static let depthData = MediaType(rawValue: "dpth")
    /// Text (`AVMediaType.text`).
    public static let text = MediaType(rawValue: "text")
    /// Closed captions (`AVMediaType.closedCaption`).
    public static let closedCaption = MediaType(rawValue: "clcp")
    /// Subtitles (`AVMediaType.subtitle`).
    public static let subtitle = MediaType(rawValue: "sbtl")
    /// Time codes (`AVMediaType.timecode`).
    public static let timecode = MediaType(rawValue: "tmcd")
}
