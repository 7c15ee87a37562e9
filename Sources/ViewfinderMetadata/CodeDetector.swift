import CTurboJPEG
import CZXing
import Foundation
import Synchronization
import ViewfinderCore

/// Finds machine-readable codes in video frames with ZXing-cpp, reading only their luma: the Y
/// plane of NV12 and I420 as it lies, every other byte of YUYV, BGRA through ZXing's own
/// luminance, and Motion-JPEG decoded to grey (luma only) into a buffer the detector keeps (a
/// damaged frame is not read).
///
/// One detector serves one lane at a time (its scratch memory is its own); its memory is bounded
/// by one grey frame of the stream's size, allocated once.
///
/// Thread safety: one call at a time (a lane's serial queue); the type is `Sendable` so a context
/// can carry it to that queue.
// unchecked: `grey` and `decompressor` are touched only inside `detect`, which one lane calls at
// a time (the lock makes a stray concurrent call wait rather than race).
package final class CodeDetector: @unchecked Sendable {
    /// What the detector looks for and where.
    package struct Request: Sendable, Equatable {
        /// The types to report; nothing is decoded when empty.
        package var types: Set<MetadataObject.ObjectType>
        /// The part of the frame searched, in metadata-output coordinates (0…1).
        package var rectOfInterest: CGRect

        package init(types: Set<MetadataObject.ObjectType>, rectOfInterest: CGRect) {
            self.types = types
            self.rectOfInterest = rectOfInterest
        }

        /// ZXing's formats for the types.
        var formats: Int32 {
            var mask: Int32 = 0
            for type in types { mask |= CodeDetector.zxingFormats[type] ?? 0 }
            return mask
        }
    }

    /// The ZXing-cpp formats behind each decodable type.
    static let zxingFormats: [MetadataObject.ObjectType: Int32] = [
        .qr: Int32(VF_ZX_QRCODE), .microQR: Int32(VF_ZX_MICROQRCODE), .dataMatrix: Int32(VF_ZX_DATAMATRIX),
        .aztec: Int32(VF_ZX_AZTEC), .pdf417: Int32(VF_ZX_PDF417),
        .ean13: Int32(VF_ZX_EAN13) | Int32(VF_ZX_UPCA), .ean8: Int32(VF_ZX_EAN8), .upce: Int32(VF_ZX_UPCE),
        .code39: Int32(VF_ZX_CODE39), .code39Mod43: Int32(VF_ZX_CODE39), .code93: Int32(VF_ZX_CODE93),
        .code128: Int32(VF_ZX_CODE128), .interleaved2of5: Int32(VF_ZX_ITF), .itf14: Int32(VF_ZX_ITF),
        .codabar: Int32(VF_ZX_CODABAR), .gs1DataBar: Int32(VF_ZX_DATABAR),
        .gs1DataBarExpanded: Int32(VF_ZX_DATABAR_EXPANDED),
    ]

    /// The types ZXing-cpp 1.4 decodes, in AVFoundation's order.
    package static let decodableTypes: [MetadataObject.ObjectType] = MetadataObject.ObjectType.allKnown.filter {
        zxingFormats[$0] != nil
    }

    private let lock = Mutex(())
    /// Motion-JPEG frames decode to grey here (allocated on the first one).
    private var grey: UnsafeMutableRawBufferPointer?
    private var decompressor: tjhandle?

    package init() {}

    deinit {
        grey?.deallocate()
        if let decompressor { tjDestroy(decompressor) }
    }

    /// A code as ZXing reported it, in pixels of the whole frame.
    package struct Found: Sendable, Equatable {
        package var format: Int32
        package var text: String
        package var corners: [CGPoint]
    }

    /// Every code of the request's types in `image` (within the rectangle of interest), as
    /// metadata objects stamped with `time` and `duration`. Throws when the frame cannot be read
    /// (a damaged Motion-JPEG frame, a format it does not know, ZXing failing).
    package func detect(
        in image: PixelBuffer, request: Request, time: MediaTime, duration: MediaTime
    ) throws(CaptureError) -> [MetadataObject] {
        guard !request.types.isEmpty else { return [] }
        let found = try read(image, request: request)
        let width = CGFloat(image.width)
        let height = CGFloat(image.height)
        return found.compactMap { code in
            guard let (type, text) = Self.classify(code, types: request.types) else { return nil }
            let corners = code.corners.map { CGPoint(x: $0.x / width, y: $0.y / height) }
            return MetadataMachineReadableCodeObject(
                type: type, time: time, duration: duration, corners: corners, stringValue: text)
        }
    }

    /// The codes ZXing reads in `image` within the request's rectangle of interest, in pixels of
    /// the whole frame.
    package func read(_ image: PixelBuffer, request: Request) throws(CaptureError) -> [Found] {
        try lock.withLock { _ throws(CaptureError) -> [Found] in
            let width = image.width
            let height = image.height
            // The rectangle of interest in whole pixels, inside the frame.
            let roi = request.rectOfInterest
            let left = max(0, min(width, Int((roi.minX * CGFloat(width)).rounded(.down))))
            let top = max(0, min(height, Int((roi.minY * CGFloat(height)).rounded(.down))))
            let right = max(left, min(width, Int((roi.maxX * CGFloat(width)).rounded(.up))))
            let bottom = max(top, min(height, Int((roi.maxY * CGFloat(height)).rounded(.up))))
            guard right - left >= 8, bottom - top >= 8 else { return [] }

            let base: UnsafeRawPointer
            let rowStride: Int
            let pixelStride: Int
            var layout = Int32(VF_ZX_LUMA)
            switch image.pixelFormat {
            case .nv12VideoRange, .nv12FullRange, .i420:
                base = UnsafeRawPointer(image.baseAddress(ofPlane: 0))
                rowStride = image.bytesPerRow(ofPlane: 0)
                pixelStride = 1
            case .yuyv:
                base = UnsafeRawPointer(image.baseAddress)
                rowStride = image.bytesPerRow
                pixelStride = 2
            case .bgra:
                base = UnsafeRawPointer(image.baseAddress)
                rowStride = image.bytesPerRow
                pixelStride = 4
                layout = Int32(VF_ZX_BGRX)
            case .mjpeg:
                base = UnsafeRawPointer(try decodeGrey(image))
                rowStride = width
                pixelStride = 1
            default:
                throw CaptureError(
                    .unsupportedFormat,
                    "the metadata output reads NV12, I420, YUYV, BGRA and Motion-JPEG frames, not \(image.pixelFormat)")
            }
            let start = base + top * rowStride + left * pixelStride
            var collector = Collector(left: left, top: top)
            var message = [CChar](repeating: 0, count: 256)
            let status = withUnsafeMutablePointer(to: &collector) { context in
                vf_zx_read(
                    start.assumingMemoryBound(to: UInt8.self), Int32(right - left), Int32(bottom - top),
                    Int32(rowStride), Int32(pixelStride), layout, request.formats, 1,
                    { context, format, text, length, corners in
                        guard let context, let corners else { return }
                        let collector = context.assumingMemoryBound(to: Collector.self)
                        collector.pointee.add(format: format, text: text, length: length, corners: corners)
                    }, context, &message, message.count)
            }
            guard status >= 0 else {
                let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                throw CaptureError(.conversionFailed, "ZXing could not read the frame: \(text)")
            }
            return collector.found
        }
    }

    /// Collects ZXing's results during one call (its corners moved back into the whole frame).
    private struct Collector {
        let left: Int
        let top: Int
        var found: [Found] = []

        mutating func add(
            format: Int32, text: UnsafePointer<CChar>?, length: Int, corners: UnsafePointer<Int32>
        ) {
            let string =
                text.map {
                    String(
                        decoding: UnsafeRawBufferPointer(start: $0, count: length).bindMemory(to: UInt8.self),
                        as: UTF8.self)
                } ?? ""
            let points = (0..<4).map {
                CGPoint(x: CGFloat(Int(corners[2 * $0]) + left), y: CGFloat(Int(corners[2 * $0 + 1]) + top))
            }
            found.append(Found(format: format, text: string, corners: points))
        }
    }

    /// Decodes a Motion-JPEG frame's luma into the detector's grey buffer.
    private func decodeGrey(_ image: PixelBuffer) throws(CaptureError) -> UnsafeMutableRawPointer {
        let size = image.width * image.height
        if grey == nil || grey!.count < size {
            grey?.deallocate()
            grey = .allocate(byteCount: size, alignment: 64)
        }
        if decompressor == nil { decompressor = tjInitDecompress() }
        guard let decompressor, let grey = grey?.baseAddress else {
            throw CaptureError(.conversionFailed, "the metadata output could not start a JPEG decoder")
        }
        let status = tjDecompress2(
            decompressor, image.baseAddress.assumingMemoryBound(to: UInt8.self), UInt(image.dataSize),
            grey.assumingMemoryBound(to: UInt8.self), Int32(image.width), Int32(image.width), Int32(image.height),
            Int32(TJPF_GRAY.rawValue), TJFLAG_FASTDCT)
        // Any failure, warnings too (a truncated frame): rows not decoded would still hold the
        // last frame's picture, whose codes must not be reported again.
        if status != 0 {
            throw CaptureError(
                .conversionFailed,
                "the metadata output could not decode a Motion-JPEG frame: "
                    + String(cString: tjGetErrorStr2(decompressor)))
        }
        return grey
    }

    /// The type a code is reported as among `types` (with its text), or `nil` when it is of none
    /// of them.
    static func classify(_ code: Found, types: Set<MetadataObject.ObjectType>) -> (MetadataObject.ObjectType, String)? {
        switch code.format {
        case Int32(VF_ZX_QRCODE): return types.contains(.qr) ? (.qr, code.text) : nil
        case Int32(VF_ZX_MICROQRCODE): return types.contains(.microQR) ? (.microQR, code.text) : nil
        case Int32(VF_ZX_DATAMATRIX): return types.contains(.dataMatrix) ? (.dataMatrix, code.text) : nil
        case Int32(VF_ZX_AZTEC): return types.contains(.aztec) ? (.aztec, code.text) : nil
        case Int32(VF_ZX_PDF417): return types.contains(.pdf417) ? (.pdf417, code.text) : nil
        case Int32(VF_ZX_EAN13): return types.contains(.ean13) ? (.ean13, code.text) : nil
        // AVFoundation has no UPC-A type: it reports UPC-A as the EAN-13 it is, a leading 0.
        case Int32(VF_ZX_UPCA): return types.contains(.ean13) ? (.ean13, "0" + code.text) : nil
        case Int32(VF_ZX_EAN8): return types.contains(.ean8) ? (.ean8, code.text) : nil
        case Int32(VF_ZX_UPCE): return types.contains(.upce) ? (.upce, code.text) : nil
        case Int32(VF_ZX_CODE93): return types.contains(.code93) ? (.code93, code.text) : nil
        case Int32(VF_ZX_CODE128): return types.contains(.code128) ? (.code128, code.text) : nil
        case Int32(VF_ZX_CODABAR): return types.contains(.codabar) ? (.codabar, code.text) : nil
        case Int32(VF_ZX_DATABAR): return types.contains(.gs1DataBar) ? (.gs1DataBar, code.text) : nil
        case Int32(VF_ZX_DATABAR_EXPANDED):
            return types.contains(.gs1DataBarExpanded) ? (.gs1DataBarExpanded, code.text) : nil
        case Int32(VF_ZX_CODE39):
            if types.contains(.code39Mod43), hasMod43CheckCharacter(code.text) { return (.code39Mod43, code.text) }
            return types.contains(.code39) ? (.code39, code.text) : nil
        case Int32(VF_ZX_ITF):
            let isITF14 = code.text.count == 14
            if isITF14, types.contains(.itf14) { return (.itf14, code.text) }
            return types.contains(.interleaved2of5) ? (.interleaved2of5, code.text) : nil
        default:
            return nil
        }
    }

    /// Code 39's 43 characters, in the order of their check values.
    private static let code39Alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-. $/+%")

    /// Whether `text`'s last character is the modulo-43 check character of the ones before it.
    static func hasMod43CheckCharacter(_ text: String) -> Bool {
        let characters = Array(text)
        guard characters.count >= 2, let check = code39Alphabet.firstIndex(of: characters.last!) else { return false }
        var sum = 0
        for character in characters.dropLast() {
            guard let value = code39Alphabet.firstIndex(of: character) else { return false }
            sum += value
        }
        return sum % 43 == check
    }
}
