// What a backend knows of a format beyond its pixel format, size and rates — the field of view
// and whether the camera can vary its frame rate with the light — and the device members built on
// it: `AVCaptureDevice.Format.videoFieldOfView`, `isAutoVideoFrameRateSupported`,
// `AVCaptureDevice.isAutoVideoFrameRateEnabled`; and `AVCaptureDevice(uniqueID:)`.

/// What a backend knows of one format beyond V4L2's listing. Left out of the format's equality
/// and hash (every instance is equal to every other): a format an application builds by hand
/// still finds the device's own, and two listings of one camera compare equal.
///
/// Thread safety: a value type.
package struct FormatTraits: Sendable, Hashable {
    /// The horizontal field of view in degrees; 0 when not known.
    package var fieldOfView: Float = 0
    /// Whether the camera can lower its frame rate in low light in this format (a V4L2 camera
    /// with the `V4L2_CID_EXPOSURE_AUTO_PRIORITY` control: UVC's auto-exposure priority).
    package var autoVideoFrameRate = false

    /// No trait known.
    package init() {}

    /// Always equal: traits do not tell formats apart.
    package static func == (lhs: FormatTraits, rhs: FormatTraits) -> Bool { true }
    /// Adds nothing: equal values hash alike.
    package func hash(into hasher: inout Hasher) {}
}

extension CaptureDevice.Format {
    /// The horizontal field of view in degrees (`AVCaptureDevice.Format.videoFieldOfView`), where
    /// it is known, else 0. V4L2 and UVC do not report it: a V4L2 camera's comes from a small
    /// table of cameras whose makers state their field of view (by USB vendor and product ID,
    /// see `KnownCameraOptics` in ViewfinderV4L2), for the formats of the aspect ratio the maker
    /// states it at (16:9 for the Logitech webcams listed); formats of another aspect read 0,
    /// since whether the camera crops or scales to them is not known. Every other camera reads 0.
    public var videoFieldOfView: Float { traits.fieldOfView }

    /// Whether ``CaptureDevice/isAutoVideoFrameRateEnabled`` may be turned on with this format
    /// active (`AVCaptureDevice.Format.isAutoVideoFrameRateSupported`): `true` for the video
    /// formats of a V4L2 camera with the `V4L2_CID_EXPOSURE_AUTO_PRIORITY` control ("Exposure,
    /// Dynamic Framerate", UVC's auto-exposure priority), `false` otherwise.
    public var isAutoVideoFrameRateSupported: Bool { traits.autoVideoFrameRate && mediaType == .video }
}

extension CaptureDevice.Control.ID {
    /// Whether the camera may lower its frame rate to expose longer in low light while exposure
    /// is automatic (V4L2's `V4L2_CID_EXPOSURE_AUTO_PRIORITY`, UVC's auto-exposure priority): 0
    /// or 1. ``CaptureDevice/isAutoVideoFrameRateEnabled`` sets it.
    public static let exposureDynamicFramerate = Self(rawValue: "exposureDynamicFramerate")
}

extension CaptureDevice {
    /// Whether the camera lowers its frame rate in low light to expose the scene properly
    /// (`AVCaptureDevice.isAutoVideoFrameRateEnabled`).
    ///
    /// On Linux this is the camera's own auto-exposure priority
    /// (``Control/ID/exposureDynamicFramerate``, `V4L2_CID_EXPOSURE_AUTO_PRIORITY`): reading it
    /// reads the camera, setting it writes the control. It acts while exposure is automatic
    /// (``ExposureMode/continuousAutoExposure``); how far the rate drops is the camera's choice
    /// (AVFoundation's 30 → 24 and 60 → 30 → 24 steps are Apple's), and frames simply arrive
    /// further apart, with their own timestamps.
    ///
    /// As AVFoundation: setting it needs the configuration lock, and setting `true` when
    /// ``activeFormat``'s ``Format/isAutoVideoFrameRateSupported`` is `false` traps (AVFoundation
    /// raises); ``setAutoVideoFrameRateEnabled(_:)`` throws instead. Changing ``activeFormat``
    /// turns it off. Where AVFoundation raises when a frame duration is set while it is on,
    /// Viewfinder turns it off and sets the duration (some cameras have it on from the factory,
    /// and a fixed rate asked for should hold).
    public var isAutoVideoFrameRateEnabled: Bool {
        get {
            guard activeFormat.isAutoVideoFrameRateSupported else { return false }
            return ((try? value(of: .exposureDynamicFramerate)) ?? 0) != 0
        }
        set {
            if newValue, !activeFormat.isAutoVideoFrameRateSupported {
                Self.unsupported(
                    true, "automatic video frame rate", check: "activeFormat.isAutoVideoFrameRateSupported")
            }
            applySetting("setAutoVideoFrameRateEnabled(_:)") { () throws(CaptureError) in
                try setAutoVideoFrameRateEnabled(newValue)
            }
        }
    }

    /// Turns the camera's automatic frame rate on or off (see ``isAutoVideoFrameRateEnabled``).
    /// Requires the configuration lock. Throws ``CaptureError/Code/unsupportedControl`` when
    /// ``activeFormat`` does not support it (turning it off then does nothing), or the
    /// device's error when the control cannot be written.
    public func setAutoVideoFrameRateEnabled(_ enabled: Bool) throws(CaptureError) {
        try requireConfigurationLock("changing the automatic video frame rate")
        guard activeFormat.isAutoVideoFrameRateSupported else {
            if !enabled { return }
            throw CaptureError(
                .unsupportedControl,
                "'\(localizedName)' cannot vary its frame rate with the light (it has no V4L2 'Exposure, Dynamic Framerate' control): check activeFormat.isAutoVideoFrameRateSupported first"
            )
        }
        try setValue(enabled ? 1 : 0, for: .exposureDynamicFramerate)
    }

    /// Turns the automatic frame rate off where it is on (a new active format or a fixed frame
    /// duration was set, under the configuration lock). Best effort: a camera that cannot be
    /// written keeps its setting.
    package func endAutoVideoFrameRate() {
        guard activeFormat.isAutoVideoFrameRateSupported, isLockedForConfiguration,
            ((try? value(of: .exposureDynamicFramerate)) ?? 0) != 0
        else { return }
        try? setValue(0, for: .exposureDynamicFramerate)
    }
}

/// Gives ``CaptureDevice`` AVFoundation's `AVCaptureDevice(uniqueID:)`: a failable initializer
/// that answers the registry's own device. Swift lets a protocol extension's initializer, not a
/// class's, hand back an existing instance, so the initializer lives here; nothing else adopts
/// this protocol.
public protocol _CaptureDeviceLookup {}

extension CaptureDevice: _CaptureDeviceLookup {}

extension _CaptureDeviceLookup where Self == CaptureDevice {
    /// The present device whose ``CaptureDevice/uniqueID`` is `uniqueID` — the same instance
    /// ``CaptureDevice/devices(for:)`` lists — or `nil` when none is (the counterpart of
    /// `AVCaptureDevice(uniqueID:)`, which returns `nil` for a device that is not available).
    public init?(uniqueID: String) {
        guard let device = CaptureDevice.device(withUniqueID: uniqueID) else { return nil }
        self = device
    }
}
