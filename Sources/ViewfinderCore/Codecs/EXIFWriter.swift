import CExif
import Foundation

/// The EXIF fields Viewfinder writes into photos, and reads back.
///
/// Strings are stored as EXIF stores them (`dateTimeOriginal` is `"YYYY:MM:DD HH:MM:SS"` in the
/// camera's local time, `offsetTimeOriginal` its UTC offset such as `"+01:00"`); use
/// ``setCaptureDate(_:timeZone:)`` to fill both from a `Date`.
///
/// Thread safety: a value type; freely sendable.
public struct EXIFMetadata: Sendable, Hashable {
    /// When the picture was taken (DateTimeOriginal, also written as DateTimeDigitized).
    public var dateTimeOriginal: String?
    /// The capture time's offset from UTC (OffsetTimeOriginal).
    public var offsetTimeOriginal: String?
    /// The camera's manufacturer (Make).
    public var make: String?
    /// The camera's model name (Model).
    public var model: String?
    /// The image's width in pixels (PixelXDimension).
    public var pixelWidth: Int?
    /// The image's height in pixels (PixelYDimension).
    public var pixelHeight: Int?
    /// How to turn the stored image for display, 1…8 (Orientation); see
    /// ``EXIFWriter/orientation(rotationAngle:isMirrored:)``.
    public var orientation: Int?
    /// A title or description (ImageDescription).
    public var imageDescription: String?
    /// The software that made the image (Software).
    public var software: String?
    /// The photographer (Artist).
    public var artist: String?
    /// A free-form comment (UserComment; written as ASCII, or as Unicode when it needs to be).
    public var userComment: String?

    /// Metadata with the given fields (all optional).
    public init(
        dateTimeOriginal: String? = nil, offsetTimeOriginal: String? = nil, make: String? = nil,
        model: String? = nil, pixelWidth: Int? = nil, pixelHeight: Int? = nil, orientation: Int? = nil,
        imageDescription: String? = nil, software: String? = nil, artist: String? = nil, userComment: String? = nil
    ) {
        self.dateTimeOriginal = dateTimeOriginal
        self.offsetTimeOriginal = offsetTimeOriginal
        self.make = make
        self.model = model
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.orientation = orientation
        self.imageDescription = imageDescription
        self.software = software
        self.artist = artist
        self.userComment = userComment
    }

    /// Sets ``dateTimeOriginal`` and ``offsetTimeOriginal`` from `date` as seen in `timeZone`.
    public mutating func setCaptureDate(_ date: Date, timeZone: TimeZone = .current) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let v = value ?? 0
            return v < 10 ? "0\(v)" : "\(v)"
        }
        let year = String(c.year ?? 0)
        dateTimeOriginal =
            "\(String(repeating: "0", count: max(0, 4 - year.count)))\(year):\(two(c.month)):\(two(c.day)) "
            + "\(two(c.hour)):\(two(c.minute)):\(two(c.second))"
        let offset = timeZone.secondsFromGMT(for: date)
        let minutes = abs(offset) / 60
        offsetTimeOriginal = "\(offset < 0 ? "-" : "+")\(two(minutes / 60)):\(two(minutes % 60))"
    }
}

/// Writes EXIF metadata into JPEG files with libexif, as the APP1 segment right after SOI, and
/// reads it back.
///
/// Thread safety: a stateless namespace; every call builds its own libexif objects.
public enum EXIFWriter {
    /// The EXIF orientation (1…8) of an image whose connection rotates frames by `rotationAngle`
    /// degrees clockwise (0, 90, 180, 270, or any multiple of 90) after mirroring them
    /// horizontally when `isMirrored`, so a viewer shows the photo the way the preview looked:
    /// 0° → 1, 90° → 6, 180° → 3, 270° → 8; mirrored 2, 7, 4, 5. `nil` for other angles.
    public static func orientation(rotationAngle: Double, isMirrored: Bool) -> Int? {
        guard rotationAngle.isFinite, rotationAngle.truncatingRemainder(dividingBy: 90) == 0 else { return nil }
        let quarterTurns = ((Int(rotationAngle) / 90) % 4 + 4) % 4
        return isMirrored ? [2, 7, 4, 5][quarterTurns] : [1, 6, 3, 8][quarterTurns]
    }

    /// The APP1 segment (`FF E1`, length, `"Exif\0\0"`, TIFF structure) holding `metadata`.
    public static func segment(for metadata: EXIFMetadata) throws(CaptureError) -> [UInt8] {
        try segment(for: metadata, thumbnail: nil)
    }

    /// The APP1 segment holding `metadata` and, when given, `thumbnail` (a JPEG file) as the
    /// EXIF thumbnail: IFD1 with Compression 6 (JPEG), the resolution tags and
    /// JPEGInterchangeFormat/JPEGInterchangeFormatLength pointing at the thumbnail's bytes.
    /// Throws ``CaptureError/Code/invalidArgument`` when the whole does not fit in an APP1
    /// segment (65,533 bytes).
    package static func segment(for metadata: EXIFMetadata, thumbnail: [UInt8]?) throws(CaptureError) -> [UInt8] {
        guard let data = vf_exif_new() else {
            throw CaptureError(.systemError, "libexif could not allocate EXIF data")
        }
        defer { exif_data_unref(data) }
        var failed: [String] = []
        func check(_ status: Int32, _ name: String) { if status != 0 { failed.append(name) } }
        func ascii(_ ifd: ExifIfd, _ tag: ExifTag, _ value: String?, _ name: String) {
            guard let value else { return }
            let clean = value.replacingOccurrences(of: "\0", with: "")
            check(vf_exif_set_ascii(data, ifd, tag, clean), name)
        }
        if let orientation = metadata.orientation {
            guard (1...8).contains(orientation) else {
                throw CaptureError(.invalidArgument, "an EXIF orientation is 1 to 8, not \(orientation)")
            }
        }
        // IFD 0: the image.
        ascii(EXIF_IFD_0, EXIF_TAG_IMAGE_DESCRIPTION, metadata.imageDescription, "ImageDescription")
        ascii(EXIF_IFD_0, EXIF_TAG_MAKE, metadata.make, "Make")
        ascii(EXIF_IFD_0, EXIF_TAG_MODEL, metadata.model, "Model")
        if let orientation = metadata.orientation {
            check(vf_exif_set_short(data, EXIF_IFD_0, EXIF_TAG_ORIENTATION, UInt16(orientation)), "Orientation")
        }
        check(vf_exif_set_rational(data, EXIF_IFD_0, EXIF_TAG_X_RESOLUTION, 72, 1), "XResolution")
        check(vf_exif_set_rational(data, EXIF_IFD_0, EXIF_TAG_Y_RESOLUTION, 72, 1), "YResolution")
        check(vf_exif_set_short(data, EXIF_IFD_0, EXIF_TAG_RESOLUTION_UNIT, 2), "ResolutionUnit")
        ascii(EXIF_IFD_0, EXIF_TAG_SOFTWARE, metadata.software, "Software")
        ascii(EXIF_IFD_0, EXIF_TAG_DATE_TIME, metadata.dateTimeOriginal, "DateTime")
        ascii(EXIF_IFD_0, EXIF_TAG_ARTIST, metadata.artist, "Artist")
        check(vf_exif_set_short(data, EXIF_IFD_0, EXIF_TAG_YCBCR_POSITIONING, 1), "YCbCrPositioning")
        // The EXIF IFD: the capture.
        check(vf_exif_set_undefined(data, EXIF_IFD_EXIF, EXIF_TAG_EXIF_VERSION, Array("0232".utf8), 4), "ExifVersion")
        ascii(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, metadata.dateTimeOriginal, "DateTimeOriginal")
        ascii(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_DIGITIZED, metadata.dateTimeOriginal, "DateTimeDigitized")
        ascii(EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME_ORIGINAL, metadata.offsetTimeOriginal, "OffsetTimeOriginal")
        check(
            vf_exif_set_undefined(data, EXIF_IFD_EXIF, EXIF_TAG_COMPONENTS_CONFIGURATION, [1, 2, 3, 0], 4),
            "ComponentsConfiguration")
        if let comment = metadata.userComment {
            let bytes = userCommentBytes(comment)
            check(
                vf_exif_set_undefined(data, EXIF_IFD_EXIF, EXIF_TAG_USER_COMMENT, bytes, UInt32(bytes.count)),
                "UserComment")
        }
        check(
            vf_exif_set_undefined(data, EXIF_IFD_EXIF, EXIF_TAG_FLASH_PIX_VERSION, Array("0100".utf8), 4),
            "FlashpixVersion")
        check(vf_exif_set_short(data, EXIF_IFD_EXIF, EXIF_TAG_COLOR_SPACE, 1), "ColorSpace")
        for (tag, value, name) in [
            (EXIF_TAG_PIXEL_X_DIMENSION, metadata.pixelWidth, "PixelXDimension"),
            (EXIF_TAG_PIXEL_Y_DIMENSION, metadata.pixelHeight, "PixelYDimension"),
        ] {
            guard let value else { continue }
            guard value > 0, value <= Int(UInt32.max) else {
                throw CaptureError(.invalidArgument, "an EXIF \(name) must be positive, not \(value)")
            }
            check(vf_exif_set_long(data, EXIF_IFD_EXIF, tag, UInt32(value)), name)
        }
        if let thumbnail {
            guard !thumbnail.isEmpty, thumbnail.count < 0xFFFF else {
                throw CaptureError(
                    .invalidArgument,
                    "an EXIF thumbnail of \(thumbnail.count) bytes does not fit in an APP1 segment: make it smaller")
            }
            // IFD 1: the thumbnail, a JPEG file (libexif adds its offset and length when saving).
            check(vf_exif_set_short(data, EXIF_IFD_1, EXIF_TAG_COMPRESSION, 6), "Compression (IFD1)")
            check(vf_exif_set_rational(data, EXIF_IFD_1, EXIF_TAG_X_RESOLUTION, 72, 1), "XResolution (IFD1)")
            check(vf_exif_set_rational(data, EXIF_IFD_1, EXIF_TAG_Y_RESOLUTION, 72, 1), "YResolution (IFD1)")
            check(vf_exif_set_short(data, EXIF_IFD_1, EXIF_TAG_RESOLUTION_UNIT, 2), "ResolutionUnit (IFD1)")
            check(vf_exif_set_thumbnail(data, thumbnail, UInt32(thumbnail.count)), "the thumbnail")
        }
        guard failed.isEmpty else {
            throw CaptureError(.systemError, "libexif could not set \(failed.joined(separator: ", "))")
        }
        var bytes: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        guard vf_exif_save(data, &bytes, &size) == 0, let bytes else {
            throw CaptureError(.systemError, "libexif could not serialise the EXIF data")
        }
        defer { vf_exif_free(bytes) }
        let length = Int(size) + 2
        guard length <= 0xFFFF else {
            throw CaptureError(
                .invalidArgument,
                thumbnail == nil
                    ? "the EXIF data is \(size) bytes; an APP1 segment holds at most 65533: shorten the metadata"
                    : "the EXIF data with its thumbnail is \(size) bytes; an APP1 segment holds at most 65533: "
                        + "ask for a smaller thumbnail or shorten the metadata")
        }
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)]
            + UnsafeBufferPointer(start: bytes, count: Int(size))
    }

    /// The JPEG file `jpeg` with `metadata` as its EXIF APP1 segment right after SOI; an EXIF
    /// APP1 segment it already has is replaced (other segments are kept as they are).
    public static func insert(_ metadata: EXIFMetadata, into jpeg: [UInt8]) throws(CaptureError) -> [UInt8] {
        try insert(metadata, thumbnail: nil, into: jpeg)
    }

    /// The JPEG file `jpeg` with `metadata` and, when given, the JPEG file `thumbnail` as its EXIF
    /// thumbnail (see ``segment(for:thumbnail:)``), the APP1 segment right after SOI.
    package static func insert(
        _ metadata: EXIFMetadata, thumbnail: [UInt8]?, into jpeg: [UInt8]
    ) throws(CaptureError) -> [UInt8] {
        let segment = try segment(for: metadata, thumbnail: thumbnail)
        let existing: [JPEGFrame.Segment]? = jpeg.withUnsafeBytes { bytes in
            JPEGFrame.layout(bytes).map { layout in
                layout.segments.filter { segment in
                    segment.marker == 0xE1 && segment.payloadCount >= 6
                        && Array(jpeg[segment.payloadOffset..<(segment.payloadOffset + 6)]) == exifHeader
                }
            }
        }
        guard let existing else {
            throw CaptureError(.invalidArgument, "cannot add EXIF to \(jpeg.count) bytes that are not a JPEG file")
        }
        var result: [UInt8] = [0xFF, 0xD8]
        result.reserveCapacity(jpeg.count + segment.count)
        result += segment
        var index = 2
        for old in existing {
            result += jpeg[index..<old.offset]
            index = old.offset + old.count
        }
        result += jpeg[index...]
        return result
    }

    /// `"Exif\0\0"`, the start of an EXIF APP1 payload.
    package static let exifHeader: [UInt8] = Array("Exif".utf8) + [0, 0]

    /// EXIF's UserComment: an 8-byte character code, then the text.
    package static func userCommentBytes(_ text: String) -> [UInt8] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            return Array("ASCII".utf8) + [0, 0, 0] + Array(text.utf8)
        }
        // UCS-2 in the file's (big-endian) byte order.
        return Array("UNICODE".utf8) + [0] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    // MARK: - Reading

    /// The EXIF thumbnail (IFD1's JPEG) of a JPEG file or APP1 payload, read with libexif; `nil`
    /// when it has none.
    package static func thumbnail(from jpeg: [UInt8]) -> [UInt8]? {
        guard !jpeg.isEmpty, jpeg.count <= Int(UInt32.max) else { return nil }
        guard let data = jpeg.withUnsafeBufferPointer({ vf_exif_load($0.baseAddress, UInt32($0.count)) }) else {
            return nil
        }
        defer { exif_data_unref(data) }
        var size: UInt32 = 0
        guard let bytes = vf_exif_thumbnail(data, &size), size > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }

    /// The EXIF fields of a JPEG file (or of an APP1 payload), parsed with libexif; `nil` when it
    /// has no EXIF data.
    public static func read(from jpeg: [UInt8]) -> EXIFMetadata? {
        guard !jpeg.isEmpty, jpeg.count <= Int(UInt32.max) else { return nil }
        guard let data = jpeg.withUnsafeBufferPointer({ vf_exif_load($0.baseAddress, UInt32($0.count)) }) else {
            return nil
        }
        defer { exif_data_unref(data) }
        let order = exif_data_get_byte_order(data)
        func entry(_ ifd: ExifIfd, _ tag: ExifTag) -> ExifEntry? {
            guard let entry = vf_exif_entry(data, ifd, tag), entry.pointee.data != nil else { return nil }
            return entry.pointee
        }
        func string(_ ifd: ExifIfd, _ tag: ExifTag) -> String? {
            guard let e = entry(ifd, tag), e.format == EXIF_FORMAT_ASCII else { return nil }
            let bytes = UnsafeBufferPointer(start: e.data, count: Int(e.size))
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        func integer(_ ifd: ExifIfd, _ tag: ExifTag) -> Int? {
            guard let e = entry(ifd, tag), e.components >= 1 else { return nil }
            switch e.format {
            case EXIF_FORMAT_SHORT where e.size >= 2: return Int(exif_get_short(e.data, order))
            case EXIF_FORMAT_LONG where e.size >= 4: return Int(exif_get_long(e.data, order))
            default: return nil
            }
        }
        var metadata = EXIFMetadata()
        metadata.imageDescription = string(EXIF_IFD_0, EXIF_TAG_IMAGE_DESCRIPTION)
        metadata.make = string(EXIF_IFD_0, EXIF_TAG_MAKE)
        metadata.model = string(EXIF_IFD_0, EXIF_TAG_MODEL)
        metadata.orientation = integer(EXIF_IFD_0, EXIF_TAG_ORIENTATION)
        metadata.software = string(EXIF_IFD_0, EXIF_TAG_SOFTWARE)
        metadata.artist = string(EXIF_IFD_0, EXIF_TAG_ARTIST)
        metadata.dateTimeOriginal = string(EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL)
        metadata.offsetTimeOriginal = string(EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME_ORIGINAL)
        metadata.pixelWidth = integer(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_X_DIMENSION)
        metadata.pixelHeight = integer(EXIF_IFD_EXIF, EXIF_TAG_PIXEL_Y_DIMENSION)
        if let e = entry(EXIF_IFD_EXIF, EXIF_TAG_USER_COMMENT), e.size >= 8 {
            let bytes = Array(UnsafeBufferPointer(start: e.data, count: Int(e.size)))
            let code = bytes.prefix(8)
            let text = bytes.dropFirst(8)
            if code.elementsEqual(Array("UNICODE".utf8) + [0]) {
                let bigEndian = order == EXIF_BYTE_ORDER_MOTOROLA
                var units: [UInt16] = []
                var index = text.startIndex
                while index + 1 < text.endIndex {
                    let first = UInt16(text[index])
                    let second = UInt16(text[index + 1])
                    units.append(bigEndian ? first << 8 | second : second << 8 | first)
                    index += 2
                }
                metadata.userComment = String(decoding: units, as: UTF16.self)
            } else {
                metadata.userComment = String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        return metadata
    }
}
