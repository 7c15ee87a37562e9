// swift-format-ignore-file: AlwaysUseLowerCamelCase
// `AVCapturePhoto.metadata` is Image I/O's properties dictionary: EXIF fields under "{Exif}", TIFF
// fields under "{TIFF}", the orientation at the top level. Image I/O's key constants keep their
// names, as Core Video's do, so `photo.metadata[kCGImagePropertyExifDictionary]` ports unchanged.

/// The top-level key of the EXIF dictionary (`"{Exif}"`).
public let kCGImagePropertyExifDictionary = "{Exif}"
/// The top-level key of the TIFF dictionary (`"{TIFF}"`).
public let kCGImagePropertyTIFFDictionary = "{TIFF}"
/// The top-level orientation, 1…8 as EXIF numbers it (`"Orientation"`).
public let kCGImagePropertyOrientation = "Orientation"
/// The top-level pixel width (`"PixelWidth"`).
public let kCGImagePropertyPixelWidth = "PixelWidth"
/// The top-level pixel height (`"PixelHeight"`).
public let kCGImagePropertyPixelHeight = "PixelHeight"
/// In `{Exif}`: when the photo was taken, `"yyyy:MM:dd HH:mm:ss"`.
public let kCGImagePropertyExifDateTimeOriginal = "DateTimeOriginal"
/// In `{Exif}`: the offset from UTC of ``kCGImagePropertyExifDateTimeOriginal``.
public let kCGImagePropertyExifOffsetTimeOriginal = "OffsetTimeOriginal"
/// In `{Exif}`: the width in pixels.
public let kCGImagePropertyExifPixelXDimension = "PixelXDimension"
/// In `{Exif}`: the height in pixels.
public let kCGImagePropertyExifPixelYDimension = "PixelYDimension"
/// In `{Exif}`: a comment.
public let kCGImagePropertyExifUserComment = "UserComment"
/// In `{TIFF}`: the camera's maker.
public let kCGImagePropertyTIFFMake = "Make"
/// In `{TIFF}`: the camera's model.
public let kCGImagePropertyTIFFModel = "Model"
/// In `{TIFF}`: the software that wrote the photo.
public let kCGImagePropertyTIFFSoftware = "Software"
/// In `{TIFF}`: who took the photo.
public let kCGImagePropertyTIFFArtist = "Artist"
/// In `{TIFF}`: a description of the photo.
public let kCGImagePropertyTIFFImageDescription = "ImageDescription"
/// In `{TIFF}`: the orientation (the same as the top-level one).
public let kCGImagePropertyTIFFOrientation = "Orientation"

extension EXIFMetadata {
    /// Which Image I/O dictionary each EXIF tag name belongs in (the rest are `{TIFF}`'s).
    package static let exifDictionaryKeys: Set<String> = [
        kCGImagePropertyExifDateTimeOriginal, kCGImagePropertyExifOffsetTimeOriginal,
        kCGImagePropertyExifPixelXDimension, kCGImagePropertyExifPixelYDimension, kCGImagePropertyExifUserComment,
    ]

    /// The fields in Image I/O's nested shape: `{Exif}` and `{TIFF}` dictionaries, and the
    /// orientation and pixel size also at the top level, as Image I/O reads them from a JPEG.
    package var imageIOProperties: [String: Any] {
        var exif: [String: Any] = [:]
        var tiff: [String: Any] = [:]
        for (key, value) in dictionary {
            if Self.exifDictionaryKeys.contains(key) { exif[key] = value } else { tiff[key] = value }
        }
        var properties: [String: Any] = [:]
        if !exif.isEmpty { properties[kCGImagePropertyExifDictionary] = exif }
        if !tiff.isEmpty { properties[kCGImagePropertyTIFFDictionary] = tiff }
        if let orientation { properties[kCGImagePropertyOrientation] = orientation }
        if let pixelWidth { properties[kCGImagePropertyPixelWidth] = pixelWidth }
        if let pixelHeight { properties[kCGImagePropertyPixelHeight] = pixelHeight }
        return properties
    }

    /// `metadata` in either shape — Image I/O's nested one or flat EXIF tag names — as flat
    /// tag names (a nested dictionary's fields win over a flat key of the same name; the
    /// top-level ``kCGImagePropertyPixelWidth``/``kCGImagePropertyPixelHeight`` are read-only and
    /// dropped).
    package static func flattened(_ metadata: [String: Any]) -> [String: Any] {
        var flat: [String: Any] = [:]
        for (key, value) in metadata where key != kCGImagePropertyPixelWidth && key != kCGImagePropertyPixelHeight {
            if key == kCGImagePropertyExifDictionary || key == kCGImagePropertyTIFFDictionary, value is [String: Any] {
                continue
            }
            flat[key] = value
        }
        for key in [kCGImagePropertyExifDictionary, kCGImagePropertyTIFFDictionary] {
            if let nested = metadata[key] as? [String: Any] { flat.merge(nested) { _, inner in inner } }
        }
        return flat
    }
}
