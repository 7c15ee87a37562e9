import Foundation

// `AVCaptureOutput.metadataOutputRectConverted(fromOutputRect:)` and
// `outputRectConverted(fromMetadataOutputRect:)`: between metadata-output coordinates (the
// camera's picture as the sensor delivers it, normalized, (0, 0) top-left to (1, 1)
// bottom-right) and an output's own coordinates (the pixels of what it delivers).

/// An output whose own coordinates are metadata-output coordinates (the metadata output): its
/// rect conversions are the identity.
package protocol MetadataCoordinateOutput: AnyObject {}

extension CaptureOutput {
    /// How a point in metadata-output coordinates becomes one of this output's: turned clockwise
    /// by `quarterTurns`, then mirrored, then scaled to `size` (pixels).
    package struct OutputGeometry: Sendable, Equatable {
        /// The delivered picture's width and height in pixels (after any turn); 1 × 1 when not
        /// known or for normalized coordinates.
        package var size: CGSize
        /// Clockwise quarter turns applied to the pixels.
        package var quarterTurns: Int
        /// Whether the pixels are mirrored left to right (after the turn).
        package var mirrored: Bool

        /// The identity: normalized, unturned, unmirrored.
        package static let identity = OutputGeometry(
            size: CGSize(width: 1, height: 1), quarterTurns: 0, mirrored: false)

        /// `point` (metadata-output coordinates) in output coordinates.
        package func outputPoint(fromMetadataPoint point: CGPoint) -> CGPoint {
            var turned = PreviewGeometry.turn(point, quarterTurns: quarterTurns)
            if mirrored { turned.x = 1 - turned.x }
            return CGPoint(x: turned.x * size.width, y: turned.y * size.height)
        }

        /// `point` (output coordinates) in metadata-output coordinates.
        package func metadataPoint(fromOutputPoint point: CGPoint) -> CGPoint {
            guard size.width > 0, size.height > 0 else { return .zero }
            var normalized = CGPoint(x: point.x / size.width, y: point.y / size.height)
            if mirrored { normalized.x = 1 - normalized.x }
            return PreviewGeometry.turn(normalized, quarterTurns: (4 - quarterTurns) % 4)
        }

        /// The rectangle enclosing `rect`'s corners mapped by `map`.
        package static func bounding(_ rect: CGRect, _ map: (CGPoint) -> CGPoint) -> CGRect {
            guard !rect.isNull else { return .null }
            let points = [
                CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
                CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY),
            ].map(map)
            let xs = points.map(\.x)
            let ys = points.map(\.y)
            return CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
        }
    }

    /// This output's coordinates, as its video connection and device make them now:
    ///
    /// - a ``CaptureVideoProcessingOutput`` (the video data and virtual camera outputs) turns and
    ///   mirrors its frames' pixels as its connection says, at its settings' width and height, else
    ///   the device's active format's (turned);
    /// - other outputs (photo, movie file) leave the pixels unturned — a photo or movie carries its
    ///   orientation as metadata, as AVFoundation's do — at the device's active format's size;
    /// - the metadata output's coordinates are metadata-output coordinates;
    /// - an output without a video connection to a camera has the identity.
    package var outputGeometry: OutputGeometry {
        if self is any MetadataCoordinateOutput { return .identity }
        guard let connection = connection(with: .video), let device = connection.device else { return .identity }
        var width = Double(device.activeFormat.dimensions.width)
        var height = Double(device.activeFormat.dimensions.height)
        guard let processing = self as? CaptureVideoProcessingOutput else {
            return OutputGeometry(size: CGSize(width: width, height: height), quarterTurns: 0, mirrored: false)
        }
        let settings = processing.typedVideoSettings
        if let settingsWidth = settings.width, let settingsHeight = settings.height {
            width = Double(settingsWidth)
            height = Double(settingsHeight)
        }
        let turns = (Int((connection.videoRotationAngle / 90).rounded()) % 4 + 4) % 4
        if turns % 2 == 1 { swap(&width, &height) }
        return OutputGeometry(
            size: CGSize(width: width, height: height), quarterTurns: turns, mirrored: connection.isVideoMirrored)
    }

    /// `rectInOutputCoordinates` (this output's coordinates: the pixels of what it delivers) as a
    /// rectangle in metadata-output coordinates, for `CaptureMetadataOutput.rectOfInterest`
    /// (the counterpart of `AVCaptureOutput.metadataOutputRectConverted(fromOutputRect:)`).
    ///
    /// A video data output's coordinates are its delivered frames' pixels, after its connection's
    /// rotation (``CaptureConnection/videoRotationAngle``) and mirroring; a photo or movie file
    /// output's are the camera's frames' pixels, unturned (they carry orientation as metadata);
    /// a metadata output's are its own. An output with no camera connected converts nothing
    /// (the rectangle comes back as it is).
    public func metadataOutputRectConverted(fromOutputRect rectInOutputCoordinates: CGRect) -> CGRect {
        let geometry = outputGeometry
        return OutputGeometry.bounding(rectInOutputCoordinates) { geometry.metadataPoint(fromOutputPoint: $0) }
    }

    /// `rectInMetadataOutputCoordinates` (normalized, the unturned picture) in this output's
    /// coordinates — the pixels of what it delivers, see
    /// ``metadataOutputRectConverted(fromOutputRect:)`` (the counterpart of
    /// `AVCaptureOutput.outputRectConverted(fromMetadataOutputRect:)`): a metadata object's
    /// bounds as a rectangle of a video data output's frames, say.
    public func outputRectConverted(fromMetadataOutputRect rectInMetadataOutputCoordinates: CGRect) -> CGRect {
        let geometry = outputGeometry
        return OutputGeometry.bounding(rectInMetadataOutputCoordinates) { geometry.outputPoint(fromMetadataPoint: $0) }
    }
}
