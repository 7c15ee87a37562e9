extension CaptureSession {
    /// A quality level or size for the whole session (the counterpart of
    /// `AVCaptureSession.Preset`). The session picks the device format that matches it.
    public struct Preset: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The largest size the camera captures at 24 fps or more (or its largest at all), raw or
        /// as Motion-JPEG, which Viewfinder decodes.
        public static let high = Preset(rawValue: "high")
        /// The size nearest 640x480 that runs at 24 fps or more (AVFoundation's `.medium` is
        /// device-dependent, often 480x360; Linux webcams rarely offer that).
        public static let medium = Preset(rawValue: "medium")
        /// The smallest size the camera offers.
        public static let low = Preset(rawValue: "low")
        /// Exactly 640x480.
        public static let vga640x480 = Preset(rawValue: "vga640x480")
        /// Exactly 1280x720.
        public static let hd1280x720 = Preset(rawValue: "hd1280x720")
        /// Exactly 1920x1080.
        public static let hd1920x1080 = Preset(rawValue: "hd1920x1080")
        /// The camera's largest raw size, whatever its frame rate (for ``CapturePhotoOutput``:
        /// photos are frames of the stream).
        public static let photo = Preset(rawValue: "photo")
        /// Exactly 352x288.
        public static let cif352x288 = Preset(rawValue: "cif352x288")
        /// Exactly 960x540.
        public static let iFrame960x540 = Preset(rawValue: "iFrame960x540")
        /// Exactly 1280x720.
        public static let iFrame1280x720 = Preset(rawValue: "iFrame1280x720")
        /// Exactly 3840x2160.
        public static let hd4K3840x2160 = Preset(rawValue: "hd4K3840x2160")
        /// Keep the device's ``CaptureDevice/activeFormat`` as set under its configuration lock.
        public static let inputPriority = Preset(rawValue: "inputPriority")

        public var description: String { rawValue }

        /// The formats of the size this preset picks from `formats`; empty if none fits. `nil` for
        /// ``inputPriority``, which picks nothing.
        ///
        /// With `decoding`, formats Viewfinder decodes (Motion-JPEG) count as well as raw ones:
        /// this is what the session negotiates from, so `.high` on a USB webcam that keeps 30 fps
        /// at 1920x1080 only in MJPEG picks 1920x1080. Without it only raw formats count.
        package func candidates(in formats: [CaptureDevice.Format], decoding: Bool = false) -> [CaptureDevice.Format]? {
            guard self != .inputPriority else { return nil }
            let raw = formats.filter {
                $0.pixelFormat.isKnown && (!$0.pixelFormat.isCompressed || (decoding && $0.pixelFormat == .mjpeg))
            }
            let smooth = raw.filter { $0.maxFrameRate >= 24 }
            let pool = smooth.isEmpty ? raw : smooth
            let size: CaptureDevice.Dimensions?
            switch self {
            case .vga640x480: size = .init(width: 640, height: 480)
            case .hd1280x720: size = .init(width: 1280, height: 720)
            case .hd1920x1080: size = .init(width: 1920, height: 1080)
            case .cif352x288: size = .init(width: 352, height: 288)
            case .iFrame960x540: size = .init(width: 960, height: 540)
            case .iFrame1280x720: size = .init(width: 1280, height: 720)
            case .hd4K3840x2160: size = .init(width: 3840, height: 2160)
            case .high: size = pool.max { $0.dimensions.area < $1.dimensions.area }?.dimensions
            case .photo: size = raw.max { $0.dimensions.area < $1.dimensions.area }?.dimensions
            case .low: size = raw.min { $0.dimensions.area < $1.dimensions.area }?.dimensions
            case .medium:
                size =
                    pool.min { abs($0.dimensions.area - 640 * 480) < abs($1.dimensions.area - 640 * 480) }?.dimensions
            default: size = nil
            }
            guard let size else { return [] }
            return raw.filter { $0.dimensions == size }
        }

        /// The first raw format this preset would pick, if any (the session's choice, which may
        /// decode Motion-JPEG, is ``FormatNegotiator``'s).
        package func bestFormat(in formats: [CaptureDevice.Format]) -> CaptureDevice.Format? {
            candidates(in: formats)?.first
        }
    }
}
