import Foundation
import ViewfinderCore

// AVFoundation's face, body and salient-object metadata, answered as AVFoundation answers on a
// device that cannot detect them: the classes exist so ported code compiles (`as?
// AVMetadataFaceObject` casts, `faceID` reads), and a metadata output never lists their types
// in `availableMetadataObjectTypes`, so it never makes one (no maintained face or body detector
// is a dependency of Viewfinder). Also the members iOS 26 added for cinematic video, which no
// Linux camera records.

extension CaptureMetadataOutput: MetadataCoordinateOutput {}

extension CaptureMetadataOutput {
    /// The types a cinematic video recording needs the output to find
    /// (`AVCaptureMetadataOutput.requiredMetadataObjectTypesForCinematicVideoCapture`): none, as
    /// for a device without cinematic video (``CaptureDeviceInput/isCinematicVideoCaptureSupported``
    /// is `false` on every Linux camera).
    public var requiredMetadataObjectTypesForCinematicVideoCapture: [MetadataObject.ObjectType] { [] }
}

extension MetadataObject {
    /// The group a detected object belongs to, across types (a face and the body it is on):
    /// always -1, none (`AVMetadataObject.groupID`; Viewfinder finds only codes, which are not
    /// grouped).
    public var groupID: Int { -1 }

    /// The object's identity across frames: always -1, not tracked (`AVMetadataObject.objectID`;
    /// a code found again in the next frame is a new object).
    public var objectID: Int { -1 }

    /// How cinematic video focuses on the object: ``CaptureDevice/CinematicVideoFocusMode/none``
    /// (`AVMetadataObject.cinematicVideoFocusMode`; no Linux camera records cinematic video).
    public var cinematicVideoFocusMode: CaptureDevice.CinematicVideoFocusMode { .none }

    /// Whether the object holds a fixed focus in cinematic video: `false`
    /// (`AVMetadataObject.isFixedFocus`).
    public var isFixedFocus: Bool { false }
}

/// A face found in a frame (the counterpart of `AVMetadataFaceObject`). Never made on Linux: no
/// face detector is a dependency of Viewfinder, so ``MetadataObject/ObjectType/face`` is never in
/// ``CaptureMetadataOutput/availableMetadataObjectTypes`` — what AVFoundation answers on a device
/// without face detection. The class exists so ported code that looks for faces compiles.
///
/// Thread safety: immutable.
// unchecked: immutable Sendable values only.
public final class MetadataFaceObject: MetadataObject, @unchecked Sendable {
    /// The face's identity while it stays in view.
    public let faceID: Int
    /// Whether ``rollAngle`` is known.
    public let hasRollAngle: Bool
    /// The face's tilt towards a shoulder, in degrees.
    public let rollAngle: CGFloat
    /// Whether ``yawAngle`` is known.
    public let hasYawAngle: Bool
    /// The face's turn about the vertical axis, in degrees.
    public let yawAngle: CGFloat

    package init(
        time: MediaTime, duration: MediaTime, bounds: CGRect, faceID: Int, rollAngle: CGFloat?, yawAngle: CGFloat?
    ) {
        self.faceID = faceID
        self.hasRollAngle = rollAngle != nil
        self.rollAngle = rollAngle ?? 0
        self.hasYawAngle = yawAngle != nil
        self.yawAngle = yawAngle ?? 0
        super.init(type: .face, time: time, duration: duration, bounds: bounds)
    }
}

/// A body found in a frame (the counterpart of `AVMetadataBodyObject`), the superclass of the
/// human, cat and dog bodies. Never made on Linux, as ``MetadataFaceObject`` says of faces.
///
/// Thread safety: immutable.
// unchecked: immutable Sendable values only.
public class MetadataBodyObject: MetadataObject, @unchecked Sendable {
    /// The body's identity while it stays in view.
    public let bodyID: Int

    package init(type: ObjectType, time: MediaTime, duration: MediaTime, bounds: CGRect, bodyID: Int) {
        self.bodyID = bodyID
        super.init(type: type, time: time, duration: duration, bounds: bounds)
    }
}

/// A human body (`AVMetadataHumanBodyObject`). Never made on Linux.
// unchecked: immutable Sendable values only.
public final class MetadataHumanBodyObject: MetadataBodyObject, @unchecked Sendable {}

/// A human full body (`AVMetadataHumanFullBodyObject`). Never made on Linux.
// unchecked: immutable Sendable values only.
public final class MetadataHumanFullBodyObject: MetadataBodyObject, @unchecked Sendable {}

/// A cat's body (`AVMetadataCatBodyObject`). Never made on Linux.
// unchecked: immutable Sendable values only.
public final class MetadataCatBodyObject: MetadataBodyObject, @unchecked Sendable {}

/// A dog's body (`AVMetadataDogBodyObject`). Never made on Linux.
// unchecked: immutable Sendable values only.
public final class MetadataDogBodyObject: MetadataBodyObject, @unchecked Sendable {}

/// A salient object: what draws the eye (`AVMetadataSalientObject`; its `objectID` is
/// ``MetadataObject/objectID``). Never made on Linux, as ``MetadataFaceObject`` says of faces.
///
/// Thread safety: immutable.
// unchecked: immutable Sendable values only.
public final class MetadataSalientObject: MetadataObject, @unchecked Sendable {
    package init(time: MediaTime, duration: MediaTime, bounds: CGRect) {
        super.init(type: .salientObject, time: time, duration: duration, bounds: bounds)
    }
}
