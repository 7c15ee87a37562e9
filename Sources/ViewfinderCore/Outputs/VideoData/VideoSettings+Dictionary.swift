import Foundation

/// AVFoundation's dictionary form of `videoSettings`, so
/// `output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]`
/// and `output.videoSettings = nil` port unchanged. Keys: ``kCVPixelBufferPixelFormatTypeKey``
/// (an `OSType` such as ``kCVPixelFormatType_32BGRA``, an `Int`, an `NSNumber` or a
/// ``PixelFormat``), ``kCVPixelBufferWidthKey`` and ``kCVPixelBufferHeightKey``.
extension VideoSettings: ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    /// Settings from a dictionary literal. A format the output cannot deliver, an unknown key or
    /// a bad size traps naming the fix, as AVFoundation raises; ``init(_:)`` throws instead.
    public init(dictionaryLiteral elements: (String, Any)...) {
        var dictionary: [String: Any] = [:]
        for (key, value) in elements { dictionary[key] = value }
        do throws(CaptureError) {
            try self.init(dictionary)
        } catch {
            preconditionFailure("videoSettings: \(error.message) (VideoSettings(_:) throws instead)")
        }
    }

    /// `nil`: the device's native format and size (as assigning `nil` to AVFoundation's
    /// `videoSettings`).
    public init(nilLiteral: ()) {
        self.init()
    }

    /// Settings from AVFoundation's dictionary form (`[String: Any]`, e.g. a `videoSettings`
    /// dictionary built in code). Throws ``CaptureError/Code/invalidArgument`` for unknown keys
    /// or values of the wrong type, and what ``init(pixelFormat:width:height:)`` throws.
    public init(_ dictionary: [String: Any]) throws(CaptureError) {
        let known: Set = [kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey]
        if let unknown = dictionary.keys.first(where: { !known.contains($0) }) {
            throw CaptureError(
                .invalidArgument,
                "videoSettings key '\(unknown)' is not supported: use kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey and kCVPixelBufferHeightKey"
            )
        }
        let width = try Self.integer(dictionary[kCVPixelBufferWidthKey], kCVPixelBufferWidthKey)
        let height = try Self.integer(dictionary[kCVPixelBufferHeightKey], kCVPixelBufferHeightKey)
        guard let value = dictionary[kCVPixelBufferPixelFormatTypeKey] else {
            guard width == nil, height == nil else {
                throw CaptureError(
                    .invalidArgument, "videoSettings with a size need kCVPixelBufferPixelFormatTypeKey too")
            }
            self.init()
            return
        }
        let format: PixelFormat
        if let pixelFormat = value as? PixelFormat {
            format = pixelFormat
        } else if let code = try Self.integer(value, kCVPixelBufferPixelFormatTypeKey), let type = OSType(exactly: code)
        {
            format = PixelFormat(rawValue: type)
        } else {
            throw CaptureError(.invalidArgument, "kCVPixelBufferPixelFormatTypeKey needs a kCVPixelFormatType_… value")
        }
        try self.init(pixelFormat: format, width: width, height: height)
    }

    /// An integer setting value (`Int`, `UInt32`, `Int32`, `NSNumber`, …), or `nil` when absent.
    private static func integer(_ value: Any?, _ key: String) throws(CaptureError) -> Int? {
        switch value {
        case nil: return nil
        case let number as Int: return number
        case let number as UInt32: return Int(number)
        case let number as Int32: return Int(number)
        case let number as UInt: return Int(exactly: number)
        case let number as Int64: return Int(exactly: number)
        case let number as NSNumber: return number.intValue
        default:
            throw CaptureError(.invalidArgument, "videoSettings value for '\(key)' must be a number, got \(value!)")
        }
    }

    /// The dictionary form (`settings[kCVPixelBufferPixelFormatTypeKey] as? OSType`): the format as
    /// an `OSType`, width and height as `Int`; `nil` for keys not set.
    public subscript(key: String) -> Any? {
        switch key {
        case kCVPixelBufferPixelFormatTypeKey: return pixelFormat?.osType
        case kCVPixelBufferWidthKey: return width
        case kCVPixelBufferHeightKey: return height
        default: return nil
        }
    }
}
