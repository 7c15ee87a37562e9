import Foundation
import ViewfinderCore

/// Something a ``CaptureMetadataOutput`` found in a video frame (the counterpart of
/// `AVMetadataObject`): its type, when it was seen and where.
///
/// ``bounds`` is in metadata-output coordinates, as AVFoundation defines them: (0, 0) is the
/// top-left and (1, 1) the bottom-right corner of the camera's picture as the sensor delivers it
/// — not rotated by the connection, not mirrored (a landscape sensor: "landscape right").
/// Convert to what a view shows with
/// ``CaptureVideoPreviewLayer/transformedMetadataObject(for:)``, or to a video
/// data output's rotated, mirrored frames with
/// ``CaptureOutput/transformedMetadataObject(for:connection:)``.
///
/// Thread safety: immutable; may be used from any thread.
// unchecked: every stored property is an immutable Sendable value; subclasses add only such.
public class MetadataObject: @unchecked Sendable, CustomStringConvertible {
    /// The kind of object (`AVMetadataObject.ObjectType`): AVFoundation's names, each with
    /// AVFoundation's raw value.
    ///
    /// Every name AVFoundation has exists; a ``CaptureMetadataOutput`` lists in
    /// ``CaptureMetadataOutput/availableMetadataObjectTypes`` only those it can find (the
    /// machine-readable codes ZXing-cpp decodes; see ``CaptureMetadataOutput/decodableObjectTypes``).
    public struct ObjectType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// AVFoundation's string for the type (`"org.iso.QRCode"`, `"face"`, …).
        public var rawValue: String

        /// The type with AVFoundation's string `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The string (AVFoundation's raw value).
        public var description: String { rawValue }

        // MARK: Machine-readable codes

        /// QR code (ISO/IEC 18004).
        public static let qr = ObjectType(rawValue: "org.iso.QRCode")
        /// Micro QR code.
        public static let microQR = ObjectType(rawValue: "org.iso.MicroQR")
        /// Data Matrix (ISO/IEC 16022).
        public static let dataMatrix = ObjectType(rawValue: "org.iso.DataMatrix")
        /// Aztec code (ISO/IEC 24778).
        public static let aztec = ObjectType(rawValue: "org.iso.Aztec")
        /// PDF417 (ISO/IEC 15438).
        public static let pdf417 = ObjectType(rawValue: "org.iso.PDF417")
        /// MicroPDF417. Not available: ZXing-cpp 1.4 does not read it.
        public static let microPDF417 = ObjectType(rawValue: "org.iso.MicroPDF417")
        /// EAN-13, and UPC-A (reported as EAN-13 with a leading 0, as AVFoundation does).
        public static let ean13 = ObjectType(rawValue: "org.gs1.EAN-13")
        /// EAN-8.
        public static let ean8 = ObjectType(rawValue: "org.gs1.EAN-8")
        /// UPC-E.
        public static let upce = ObjectType(rawValue: "org.gs1.UPC-E")
        /// Code 39.
        public static let code39 = ObjectType(rawValue: "org.iso.Code39")
        /// Code 39 whose last character is a valid modulo-43 check character.
        public static let code39Mod43 = ObjectType(rawValue: "org.iso.Code39Mod43")
        /// Code 93.
        public static let code93 = ObjectType(rawValue: "com.intermec.Code93")
        /// Code 128.
        public static let code128 = ObjectType(rawValue: "org.iso.Code128")
        /// Interleaved 2 of 5 (any length but 14 digits' ITF-14).
        public static let interleaved2of5 = ObjectType(rawValue: "org.ansi.Interleaved2of5")
        /// ITF-14 (Interleaved 2 of 5 with 14 digits).
        public static let itf14 = ObjectType(rawValue: "org.gs1.ITF14")
        /// Codabar.
        public static let codabar = ObjectType(rawValue: "Codabar")
        /// GS1 DataBar (formerly RSS-14).
        public static let gs1DataBar = ObjectType(rawValue: "org.gs1.GS1DataBar")
        /// GS1 DataBar Expanded.
        public static let gs1DataBarExpanded = ObjectType(rawValue: "org.gs1.GS1DataBarExpanded")
        /// GS1 DataBar Limited. Not available: ZXing-cpp 1.4 does not read it.
        public static let gs1DataBarLimited = ObjectType(rawValue: "org.gs1.GS1DataBarLimited")

        // MARK: Faces, bodies and salient objects (never available on Linux)

        /// Faces. Not available: no maintained face detector is a dependency of Viewfinder.
        public static let face = ObjectType(rawValue: "face")
        /// Human bodies. Not available.
        public static let humanBody = ObjectType(rawValue: "humanBody")
        /// Human full bodies. Not available.
        public static let humanFullBody = ObjectType(rawValue: "humanFullBody")
        /// Cat bodies. Not available.
        public static let catBody = ObjectType(rawValue: "catBody")
        /// Dog bodies. Not available.
        public static let dogBody = ObjectType(rawValue: "dogBody")
        /// Cat heads. Not available.
        public static let catHead = ObjectType(rawValue: "catHead")
        /// Dog heads. Not available.
        public static let dogHead = ObjectType(rawValue: "dogHead")
        /// Salient objects. Not available.
        public static let salientObject = ObjectType(rawValue: "salientObject")

        /// Every type AVFoundation names, machine-readable codes first.
        public static let allKnown: [ObjectType] = [
            .qr, .microQR, .dataMatrix, .aztec, .pdf417, .microPDF417, .ean13, .ean8, .upce, .code39, .code39Mod43,
            .code93, .code128, .interleaved2of5, .itf14, .codabar, .gs1DataBar, .gs1DataBarExpanded,
            .gs1DataBarLimited, .face, .humanBody, .humanFullBody, .catBody, .dogBody, .catHead, .dogHead,
            .salientObject,
        ]
    }

    /// What kind of object it is.
    public let type: ObjectType
    /// The presentation time of the frame it was found in.
    public let time: MediaTime
    /// How long that frame lasts (the frame interval).
    public let duration: MediaTime
    /// The rectangle enclosing the object, in metadata-output coordinates (see the type's summary)
    /// or, for a transformed object, in the coordinates it was transformed to.
    public let bounds: CGRect

    /// An object of `type` seen at `time` for `duration`, inside `bounds`.
    public init(type: ObjectType, time: MediaTime, duration: MediaTime, bounds: CGRect) {
        self.type = type
        self.time = time
        self.duration = duration
        self.bounds = bounds
    }

    /// The same object with its geometry mapped through `transform` (a point in the object's
    /// coordinates to a point in the new ones); a subclass maps what it adds too.
    package func mapped(_ transform: (CGPoint) -> CGPoint) -> MetadataObject {
        MetadataObject(
            type: type, time: time, duration: duration,
            bounds: Self.boundingBox(of: Self.cornerPoints(of: bounds).map(transform)))
    }

    /// The four corners of `rect`, clockwise from its origin.
    package static func cornerPoints(of rect: CGRect) -> [CGPoint] {
        [
            CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
            CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY),
        ]
    }

    /// The smallest rectangle holding every one of `points`.
    package static func boundingBox(of points: [CGPoint]) -> CGRect {
        guard let first = points.first else { return .null }
        var (minX, minY, maxX, maxY) = (first.x, first.y, first.x, first.y)
        for point in points.dropFirst() {
            minX = min(minX, point.x)
            minY = min(minY, point.y)
            maxX = max(maxX, point.x)
            maxY = max(maxY, point.y)
        }
        return CGRect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    /// The type, time and bounds.
    public var description: String { "\(type) at \(time.seconds) s in \(bounds)" }
}

/// A barcode or 2-D code found in a frame, with what it says (the counterpart of
/// `AVMetadataMachineReadableCodeObject`).
///
/// Thread safety: immutable; may be used from any thread.
// unchecked: immutable Sendable values only.
public final class MetadataMachineReadableCodeObject: MetadataObject, @unchecked Sendable {
    /// The code's corners, in the object's coordinates (as ``MetadataObject/bounds``): the
    /// symbol's top-left, top-right, bottom-right and bottom-left as the symbol reads (so a code
    /// turned upside down in the picture has its top-left corner at the bottom right). A 1-D
    /// barcode's corners are the ends of the first and last scan lines across its bars that read
    /// it: its start and end, as high as it was read.
    public let corners: [CGPoint]
    /// The text the code holds (UTF-8 decoded, by the code's character-set indications where it
    /// has them); `nil` if it holds no text. A UPC-A code reads as its EAN-13 form, with a
    /// leading `0`.
    public let stringValue: String?
    /// The symbol's raw structure (CoreImage's `CIBarcodeDescriptor`): always `nil` here, as
    /// AVFoundation leaves it for symbologies it has no descriptor for.
    public let descriptor: BarcodeDescriptor?

    /// A code of `type` saying `stringValue`, seen at `time` for `duration` with `corners`; its
    /// bounds enclose the corners.
    public init(
        type: ObjectType, time: MediaTime, duration: MediaTime, corners: [CGPoint], stringValue: String?,
        descriptor: BarcodeDescriptor? = nil
    ) {
        self.corners = corners
        self.stringValue = stringValue
        self.descriptor = descriptor
        super.init(type: type, time: time, duration: duration, bounds: Self.boundingBox(of: corners))
    }

    package override func mapped(_ transform: (CGPoint) -> CGPoint) -> MetadataObject {
        MetadataMachineReadableCodeObject(
            type: type, time: time, duration: duration, corners: corners.map(transform), stringValue: stringValue,
            descriptor: descriptor)
    }

    /// The type, the text and the corners.
    public override var description: String {
        "\(type) \"\(stringValue ?? "")\" at \(time.seconds) s, corners \(corners)"
    }
}

/// A barcode's raw structure (the counterpart of CoreImage's abstract `CIBarcodeDescriptor`).
/// Viewfinder makes none: ``MetadataMachineReadableCodeObject/descriptor`` is always `nil`.
public class BarcodeDescriptor: @unchecked Sendable {  // unchecked: no state.
    /// A descriptor with nothing in it (for subclasses).
    public init() {}
}

/// A metadata output's objects in a synchronized collection
/// (`AVCaptureSynchronizedMetadataObjectData`): what it found in the frame of the collection's
/// time, when a ``CaptureMetadataOutput`` is one of a ``CaptureDataOutputSynchronizer``'s outputs.
///
/// Thread safety: immutable; freely sendable.
public final class CaptureSynchronizedMetadataObjectData: CaptureSynchronizedData, @unchecked Sendable {
    // unchecked: immutable.
    /// The objects found in the frame, in metadata-output coordinates as the output's delegate
    /// gets them; never `nil`, empty when the frame had none.
    public let metadataObjects: [MetadataObject]

    package init(metadataObjects: [MetadataObject], timestamp: MediaTime) {
        self.metadataObjects = metadataObjects
        super.init(timestamp: timestamp)
    }
}
