import Foundation

/// Where a preview layer shows the camera's picture, as pure functions of the picture's size, the
/// layer's bounds, its gravity and the connection's rotation and mirroring: the conversions
/// between layer points and capture-device points, and the pixel plan the renderer follows.
///
/// Capture-device coordinates are AVFoundation's: (0, 0) is the top-left and (1, 1) the
/// bottom-right corner of the sensor's picture as it comes from the camera — not rotated, not
/// mirrored — whatever the gravity, rotation and mirroring of the layer. The picture shown is
/// that picture turned clockwise by the rotation angle, then flipped left to right when mirrored
/// (the connection's order), then placed by the gravity. Points outside the picture (in the black
/// bands of ``LayerVideoGravity/resizeAspect``, or outside the layer) convert to device
/// coordinates outside 0…1, on the same line, so every conversion has an exact inverse.
package struct PreviewGeometry: Sendable, Hashable {
    /// The camera's frame size in pixels (before rotation).
    package var imageSize: CGSize
    /// The layer's bounds.
    package var bounds: CGRect
    package var gravity: LayerVideoGravity = .resizeAspect
    /// Clockwise, in degrees: 0, 90, 180 or 270 (other values round to the nearest quarter turn).
    package var rotationAngle: Double = 0
    package var mirrored = false

    /// Quarter turns clockwise, 0…3.
    package var quarterTurns: Int { (Int((rotationAngle / 90).rounded()) % 4 + 4) % 4 }

    /// The size of the picture as shown: the image size, width and height swapped by a quarter
    /// turn.
    package var displayedSize: CGSize {
        quarterTurns % 2 == 0 ? imageSize : CGSize(width: imageSize.height, height: imageSize.width)
    }

    /// Where the whole picture lies in layer coordinates: centred in the bounds, inside them for
    /// ``LayerVideoGravity/resizeAspect``, covering (and overflowing) them for
    /// ``LayerVideoGravity/resizeAspectFill``, equal to them for ``LayerVideoGravity/resize`` and
    /// when the image size is unknown (zero).
    package var contentRect: CGRect {
        let shown = displayedSize
        guard shown.width > 0, shown.height > 0, bounds.width > 0, bounds.height > 0, gravity != .resize else {
            return bounds
        }
        let widthScale = bounds.width / shown.width
        let heightScale = bounds.height / shown.height
        let scale = gravity == .resizeAspectFill ? max(widthScale, heightScale) : min(widthScale, heightScale)
        let size = CGSize(width: shown.width * scale, height: shown.height * scale)
        return CGRect(
            x: bounds.midX - size.width / 2, y: bounds.midY - size.height / 2, width: size.width, height: size.height)
    }

    // MARK: Points

    /// The capture-device point under `layerPoint`.
    package func devicePoint(fromLayerPoint layerPoint: CGPoint) -> CGPoint {
        let content = contentRect
        var x = content.width > 0 ? (layerPoint.x - content.minX) / content.width : 0
        let y = content.height > 0 ? (layerPoint.y - content.minY) / content.height : 0
        if mirrored { x = 1 - x }
        // Undo the clockwise turn: a turn of q quarters is undone by 4 - q more.
        return Self.turn(CGPoint(x: x, y: y), quarterTurns: (4 - quarterTurns) % 4)
    }

    /// The layer point showing `devicePoint`.
    package func layerPoint(fromDevicePoint devicePoint: CGPoint) -> CGPoint {
        var shown = Self.turn(devicePoint, quarterTurns: quarterTurns)
        if mirrored { shown.x = 1 - shown.x }
        let content = contentRect
        return CGPoint(x: content.minX + shown.x * content.width, y: content.minY + shown.y * content.height)
    }

    /// A point of a unit square turned clockwise by `quarterTurns` quarter turns about its
    /// centre: a quarter turn takes the top-left corner to the top-right.
    package static func turn(_ point: CGPoint, quarterTurns: Int) -> CGPoint {
        switch quarterTurns {
        case 1: return CGPoint(x: 1 - point.y, y: point.x)
        case 2: return CGPoint(x: 1 - point.x, y: 1 - point.y)
        case 3: return CGPoint(x: point.y, y: 1 - point.x)
        default: return point
        }
    }

    // MARK: Rectangles

    /// The rectangle in capture-device (metadata output) coordinates that `layerRect` covers.
    package func deviceRect(fromLayerRect layerRect: CGRect) -> CGRect {
        Self.bounding(devicePoint(fromLayerPoint: layerRect.origin), devicePoint(fromLayerPoint: layerRect.farCorner))
    }

    /// The layer rectangle that shows `deviceRect`, given in capture-device (metadata output)
    /// coordinates.
    package func layerRect(fromDeviceRect deviceRect: CGRect) -> CGRect {
        Self.bounding(layerPoint(fromDevicePoint: deviceRect.origin), layerPoint(fromDevicePoint: deviceRect.farCorner))
    }

    /// The rectangle with opposite corners `a` and `b` (turns and mirrors map rectangles to
    /// rectangles, swapping which corners are opposite).
    private static func bounding(_ a: CGPoint, _ b: CGPoint) -> CGRect {
        CGRect(x: min(a.x, b.x), y: min(a.y, b.y), width: abs(a.x - b.x), height: abs(a.y - b.y))
    }

    // MARK: Pixels

    /// How the renderer makes a frame of `width` × `height` pixels (the layer's size) from a
    /// camera frame of `imageWidth` × `imageHeight`: scale the camera frame (before rotation) to
    /// `scaledSize`, turn and mirror it, then crop (`.resizeAspectFill`) or place it on black
    /// (`.resizeAspect`) at `offset`.
    package struct PixelPlan: Sendable, Hashable {
        /// The size the camera frame is scaled to, before rotation.
        package var scaledSize: CaptureDevice.Dimensions
        /// The scaled picture's size after rotation.
        package var shownSize: CaptureDevice.Dimensions
        /// The rendered frame's size (the layer's).
        package var outputSize: CaptureDevice.Dimensions
        /// For fill: the top-left of the crop within the shown picture; for aspect: where the
        /// picture sits on the black canvas; zero for resize.
        package var offsetX: Int
        package var offsetY: Int

        /// Whether the picture overflows the output and is cropped.
        package var crops: Bool { shownSize.width > outputSize.width || shownSize.height > outputSize.height }
        /// Whether the picture leaves black bands.
        package var letterboxes: Bool { shownSize.width < outputSize.width || shownSize.height < outputSize.height }
    }

    /// The pixel plan for an output of `output` pixels (each side at least 1), the integer
    /// counterpart of ``contentRect`` for bounds at the origin of that size.
    package static func pixelPlan(
        image: CaptureDevice.Dimensions, output: CaptureDevice.Dimensions, gravity: LayerVideoGravity,
        quarterTurns: Int
    ) -> PixelPlan {
        let swapped = quarterTurns % 2 == 1
        let shownImage = swapped ? (image.pixelHeight, image.pixelWidth) : (image.pixelWidth, image.pixelHeight)
        var shown = (output.pixelWidth, output.pixelHeight)
        if gravity != .resize, shownImage.0 > 0, shownImage.1 > 0 {
            let widthScale = Double(output.pixelWidth) / Double(shownImage.0)
            let heightScale = Double(output.pixelHeight) / Double(shownImage.1)
            let fill = gravity == .resizeAspectFill
            let scale = fill ? max(widthScale, heightScale) : min(widthScale, heightScale)
            var width = max(1, Int((Double(shownImage.0) * scale).rounded()))
            var height = max(1, Int((Double(shownImage.1) * scale).rounded()))
            if fill {
                width = max(width, output.pixelWidth)
                height = max(height, output.pixelHeight)
            } else {
                width = min(width, output.pixelWidth)
                height = min(height, output.pixelHeight)
            }
            shown = (width, height)
        }
        let offsetX = abs(output.pixelWidth - shown.0) / 2
        let offsetY = abs(output.pixelHeight - shown.1) / 2
        return PixelPlan(
            scaledSize: swapped
                ? .init(width: shown.1, height: shown.0) : .init(width: shown.0, height: shown.1),
            shownSize: .init(width: shown.0, height: shown.1), outputSize: output, offsetX: offsetX,
            offsetY: offsetY)
    }
}

extension CGRect {
    /// The corner opposite the origin.
    fileprivate var farCorner: CGPoint { CGPoint(x: origin.x + size.width, y: origin.y + size.height) }
}
