import Foundation
import ViewfinderCore

/// The field of view of cameras whose makers state it, by USB vendor and product ID: the source
/// of ``CaptureDevice/Format/videoFieldOfView`` for V4L2 cameras (V4L2 and UVC report no field
/// of view).
///
/// A maker states one diagonal angle, measured at one aspect ratio (the Logitech webcams below:
/// at their 16:9 formats). Formats of that aspect ratio report the horizontal angle it gives
/// (`2·atan(tan(diagonal/2) · width/diagonal in pixels)`); formats of another aspect report 0,
/// since whether the camera crops or scales to them is not known. A camera not listed reports 0.
///
/// Thread safety: a value type.
package struct KnownCameraOptics: Sendable, Hashable {
    /// The diagonal field of view in degrees, as the maker states it.
    package var diagonalDegrees: Double
    /// The width and height of the aspect ratio it was stated at.
    package var aspectWidth: Int
    package var aspectHeight: Int

    /// The cameras listed: `"vendor:product"` (four lower-case hex digits each) → optics. Each
    /// from the maker's published specification.
    package static let table: [String: KnownCameraOptics] = [
        // Logitech HD Pro Webcam C920 (two product IDs): 78° diagonal.
        "046d:082d": .init(diagonalDegrees: 78, aspectWidth: 16, aspectHeight: 9),
        "046d:0892": .init(diagonalDegrees: 78, aspectWidth: 16, aspectHeight: 9),
        // Logitech C922 Pro Stream Webcam: 78° diagonal.
        "046d:085c": .init(diagonalDegrees: 78, aspectWidth: 16, aspectHeight: 9),
        // Logitech C930e: 90° diagonal.
        "046d:0843": .init(diagonalDegrees: 90, aspectWidth: 16, aspectHeight: 9),
        // Logitech C270: 55° diagonal.
        "046d:0825": .init(diagonalDegrees: 55, aspectWidth: 16, aspectHeight: 9),
    ]

    /// The optics of the camera with these USB IDs, if listed.
    package static func lookup(vendorID: String?, productID: String?) -> KnownCameraOptics? {
        guard let vendorID, let productID else { return nil }
        return table["\(vendorID.lowercased()):\(productID.lowercased())"]
    }

    /// The horizontal field of view in degrees of a format of `dimensions`: from the diagonal
    /// for a format of the stated aspect ratio (within 1 %), else 0 (not known).
    package func horizontalFieldOfView(of dimensions: CaptureDevice.Dimensions) -> Float {
        let width = Double(dimensions.width)
        let height = Double(dimensions.height)
        guard width > 0, height > 0 else { return 0 }
        let aspect = Double(aspectWidth) / Double(aspectHeight)
        guard abs(width / height - aspect) / aspect < 0.01 else { return 0 }
        let halfDiagonal = diagonalDegrees / 2 * .pi / 180
        let share = width / (width * width + height * height).squareRoot()
        return Float(2 * atan(tan(halfDiagonal) * share) * 180 / .pi)
    }
}
