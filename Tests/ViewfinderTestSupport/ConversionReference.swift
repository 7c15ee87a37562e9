@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// An independent BT.601 reference for the conversion tests: textbook formulas in doubles,
/// written from the standard (Kr = 0.299, Kb = 0.114), not from the library's code.
package enum ConversionReference {
    package static let kr = 0.299
    package static let kb = 0.114
    package static let kg = 1 - kr - kb

    /// Components of one pixel: (B, G, R) for BGRA, (Y, Cb, Cr) for the Y'CbCr formats.
    package typealias Components = (Double, Double, Double)

    /// The source components at (x, y) of `buffer`, whatever its format.
    package static func components(of buffer: PixelBuffer, x: Int, y: Int) -> Components {
        func byte(_ plane: Int, _ column: Int, _ row: Int) -> Double {
            Double(buffer.bytes(ofPlane: plane)[row * buffer.bytesPerRow(ofPlane: plane) + column])
        }
        switch buffer.pixelFormat {
        case .bgra:
            return (byte(0, x * 4, y), byte(0, x * 4 + 1, y), byte(0, x * 4 + 2, y))
        case .yuyv:
            let pair = (x / 2) * 4
            return (byte(0, x * 2, y), byte(0, pair + 1, y), byte(0, pair + 3, y))
        case .nv12VideoRange, .nv12FullRange:
            return (byte(0, x, y), byte(1, (x / 2) * 2, y / 2), byte(1, (x / 2) * 2 + 1, y / 2))
        case .i420:
            return (byte(0, x, y), byte(1, x / 2, y / 2), byte(2, x / 2, y / 2))
        default:
            fatalError("no reference for \(buffer.pixelFormat)")
        }
    }

    /// Normalised R', G', B' (0–1) of components in `format`.
    package static func rgb(_ c: Components, format: PixelFormat) -> (r: Double, g: Double, b: Double) {
        if format == .bgra { return (c.2 / 255, c.1 / 255, c.0 / 255) }
        let luma: Double
        let pb: Double
        let pr: Double
        if format.isFullRange {
            (luma, pb, pr) = (c.0 / 255, (c.1 - 128) / 255, (c.2 - 128) / 255)
        } else {
            (luma, pb, pr) = ((c.0 - 16) / 219, (c.1 - 128) / 224, (c.2 - 128) / 224)
        }
        let r = luma + 2 * (1 - kr) * pr
        let b = luma + 2 * (1 - kb) * pb
        let g = (luma - kr * r - kb * b) / kg
        return (r, g, b)
    }

    /// The components `format` stores for normalised R', G', B', rounded and clamped to 0–255.
    package static func components(r: Double, g: Double, b: Double, format: PixelFormat) -> Components {
        func byte(_ v: Double) -> Double { min(255, max(0, v.rounded())) }
        let (r, g, b) = (min(1, max(0, r)), min(1, max(0, g)), min(1, max(0, b)))
        if format == .bgra { return (byte(b * 255), byte(g * 255), byte(r * 255)) }
        let luma = kr * r + kg * g + kb * b
        let pb = (b - luma) / (2 * (1 - kb))
        let pr = (r - luma) / (2 * (1 - kr))
        if format.isFullRange { return (byte(luma * 255), byte(128 + pb * 255), byte(128 + pr * 255)) }
        return (byte(16 + luma * 219), byte(128 + pb * 224), byte(128 + pr * 224))
    }

    /// The reference conversion of one pixel.
    package static func convert(_ c: Components, from source: PixelFormat, to destination: PixelFormat) -> Components {
        let (r, g, b) = rgb(c, format: source)
        return components(r: r, g: g, b: b, format: destination)
    }
}
