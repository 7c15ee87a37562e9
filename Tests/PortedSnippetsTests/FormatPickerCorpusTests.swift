// A porting-corpus class written (for this project) in the pattern public iOS capture code uses
// to choose a format: walk `device.formats`, read each one's `CMVideoDimensions` from its format
// description (Int32 fields), keep the fastest frame rate under a width cap, and size a photo
// request from the chosen dimensions. "AV" and "CM" deleted, nothing else changed.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTesting

// MARK: A format picker

/// Picks the format with the highest frame rate whose width is at most `maxWidth`, the larger
/// one on a tie, and locks the device to it at that rate, as slow-motion and "best format"
/// helpers do.
final class FastestFormatPicker {
    struct Choice {
        let format: CaptureDevice.Format
        let range: FrameRateRange
        let dimensions: VideoDimensions
    }

    func fastestFormat(of device: CaptureDevice, maxWidth: Int32) -> Choice? {
        var best: Choice?
        for format in device.formats {
            let dimensions = VideoFormatDescriptionGetDimensions(format.formatDescription)
            if dimensions.width > maxWidth { continue }
            for range in format.videoSupportedFrameRateRanges {
                guard let current = best else {
                    best = Choice(format: format, range: range, dimensions: dimensions)
                    continue
                }
                let faster = range.maxFrameRate > current.range.maxFrameRate
                let larger =
                    range.maxFrameRate == current.range.maxFrameRate
                    && dimensions.width * dimensions.height > current.dimensions.width * current.dimensions.height
                if faster || larger { best = Choice(format: format, range: range, dimensions: dimensions) }
            }
        }
        return best
    }

    func lock(_ device: CaptureDevice, to choice: Choice) throws {
        try device.lockForConfiguration()
        device.activeFormat = choice.format
        device.activeVideoMinFrameDuration = choice.range.minFrameDuration
        device.activeVideoMaxFrameDuration = choice.range.minFrameDuration
        device.unlockForConfiguration()
    }

    /// The preview's aspect ratio, as layout code computes it from the dimensions.
    func aspectRatio(of dimensions: VideoDimensions) -> CGFloat {
        CGFloat(dimensions.width) / CGFloat(dimensions.height)
    }

    /// A photo request no larger than the video: `CMVideoDimensions` built from Int32 fields.
    func photoDimensions(for choice: Choice, limit: Int32) -> VideoDimensions {
        VideoDimensions(width: min(choice.dimensions.width, limit), height: min(choice.dimensions.height, limit))
    }
}

@Suite("Porting corpus: a format picker on CMVideoDimensions")
struct FormatPickerCorpusTests {
    @Test("the picker keeps the fastest format under the width cap and the device runs at its rate")
    func picksFastestFormat() throws {
        try withSimulatedWebcam {
            let device = try #require(CaptureDevice.default(for: .video))
            let picker = FastestFormatPicker()
            let choice = try #require(picker.fastestFormat(of: device, maxWidth: 1280))

            // The expectation, computed another way: every (format, range) pair under the cap.
            let candidates = device.formats.filter { $0.dimensions.pixelWidth <= 1280 }
                .flatMap { format in format.videoSupportedFrameRateRanges.map { (format, $0) } }
            let topRate = try #require(candidates.map(\.1.maxFrameRate).max())
            let topArea = try #require(
                candidates.filter { $0.1.maxFrameRate == topRate }.map(\.0.dimensions.area).max())
            #expect(choice.range.maxFrameRate == topRate)
            #expect(choice.format.dimensions.area == topArea)
            #expect(choice.dimensions == choice.format.dimensions)
            #expect(choice.dimensions.width <= 1280)

            try picker.lock(device, to: choice)
            #expect(device.activeFormat == choice.format)
            #expect(device.activeVideoMinFrameDuration == choice.range.minFrameDuration)
            let ratio = picker.aspectRatio(of: choice.dimensions)
            #expect(abs(ratio - CGFloat(choice.dimensions.pixelWidth) / CGFloat(choice.dimensions.pixelHeight)) < 1e-9)

            let photo = picker.photoDimensions(for: choice, limit: 640)
            #expect(photo.width == min(choice.dimensions.width, 640))
            #expect(photo.height == min(choice.dimensions.height, 640))
        }
    }
}
