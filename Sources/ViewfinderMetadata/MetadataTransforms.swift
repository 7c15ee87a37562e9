import Foundation
import ViewfinderCore

extension CaptureVideoPreviewLayer {
    /// `metadataObject` (in metadata-output coordinates) as the layer shows it: its bounds and,
    /// for a code, its corners in layer coordinates, with the layer's bounds, gravity and its
    /// connection's rotation and mirroring taken into account (the counterpart of
    /// `AVCaptureVideoPreviewLayer.transformedMetadataObject(for:)`). A code's corners keep their
    /// order (the symbol's own top-left first), so a rotated or mirrored picture moves them.
    /// `nil` only for an object of a kind this library does not know.
    public func transformedMetadataObject(for metadataObject: MetadataObject) -> MetadataObject? {
        let geometry = geometry
        return metadataObject.mapped { geometry.layerPoint(fromDevicePoint: $0) }
    }
}

extension CaptureOutput {
    /// `metadataObject` (in metadata-output coordinates) in the coordinates of this output's
    /// frames as `connection` delivers them: normalized, (0, 0) top-left to (1, 1) bottom-right of
    /// the picture after the connection's clockwise rotation (``CaptureConnection/videoRotationAngle``)
    /// and then its mirroring (``CaptureConnection/isVideoMirrored``) — the counterpart of
    /// `AVCaptureOutput.transformedMetadataObject(for:connection:)`. Multiply by a delivered
    /// frame's width and height for pixels. `nil` when `connection` is not one of this output's.
    public func transformedMetadataObject(
        for metadataObject: MetadataObject, connection: CaptureConnection
    ) -> MetadataObject? {
        guard connections.contains(where: { $0 === connection }) else { return nil }
        let turns = (Int((connection.videoRotationAngle / 90).rounded()) % 4 + 4) % 4
        let mirrored = connection.isVideoMirrored
        return metadataObject.mapped { point in
            var shown = PreviewGeometry.turn(point, quarterTurns: turns)
            if mirrored { shown.x = 1 - shown.x }
            return shown
        }
    }
}
