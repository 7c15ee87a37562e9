/// How frames are turned (`AVCaptureVideoOrientation` with "AV" deleted; raw values match). See
/// ``CaptureConnection/videoOrientation`` for the angles.
public enum CaptureVideoOrientation: Int, Sendable, Hashable, CaseIterable {
    /// Upright for a device held tall: the frame turned 90° clockwise.
    case portrait = 1
    /// Upside down for a device held tall: 270°.
    case portraitUpsideDown = 2
    /// The sensor's own orientation (home button on the right): 0°.
    case landscapeRight = 3
    /// Turned half round: 180°.
    case landscapeLeft = 4

    /// The clockwise rotation, in degrees, this orientation applies.
    public var rotationAngle: Double {
        switch self {
        case .landscapeRight: return 0
        case .portrait: return 90
        case .landscapeLeft: return 180
        case .portraitUpsideDown: return 270
        }
    }

    /// The orientation of a rotation `angle` (0, 90, 180 or 270; others round to the nearest).
    public init(rotationAngle angle: Double) {
        switch (Int((angle / 90).rounded()) % 4 + 4) % 4 {
        case 1: self = .portrait
        case 2: self = .landscapeLeft
        case 3: self = .portraitUpsideDown
        default: self = .landscapeRight
        }
    }
}
