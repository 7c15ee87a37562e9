import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("EXIF through libexif")
struct EXIFWriterTests {
    static func fullMetadata() -> EXIFMetadata {
        var metadata = EXIFMetadata(
            make: "Logitech", model: "HD Pro Webcam C920", pixelWidth: 640, pixelHeight: 480, orientation: 6,
            imageDescription: "A test pattern", software: "Viewfinder", artist: "CI", userComment: "frame 42")
        metadata.setCaptureDate(Date(timeIntervalSince1970: 1_700_000_000), timeZone: TimeZone(secondsFromGMT: 3600)!)
        return metadata
    }

    @Test func roundTripsEveryFieldThroughAPhoto() throws {
        let jpeg = try JPEGTestSupport.jpeg(42, subsampling: .yuv420)
        let metadata = Self.fullMetadata()
        let photo = try EXIFWriter.insert(metadata, into: jpeg)
        // APP1 right after SOI, starting with the EXIF header.
        #expect(Array(photo.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE1])
        #expect(Array(photo[6..<12]) == EXIFWriter.exifHeader)
        #expect(EXIFWriter.read(from: photo) == metadata)
        #expect(metadata.dateTimeOriginal == "2023:11:14 23:13:20")
        #expect(metadata.offsetTimeOriginal == "+01:00")
        // The photo is still a JPEG of the same frame.
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .bgra)
        let decoded = try JPEGTestSupport.buffer(.bgra, 640, 480)
        try decoder.decode(photo, into: decoded)
        #expect(TestPattern.readSequenceNumber(from: decoded) == 42)
    }

    @Test func replacesAnExistingEXIFSegment() throws {
        let jpeg = try JPEGTestSupport.jpeg(1)
        let first = try EXIFWriter.insert(Self.fullMetadata(), into: jpeg)
        let second = EXIFMetadata(model: "Other", orientation: 3, userComment: "Grüße, 世界")
        let photo = try EXIFWriter.insert(second, into: first)
        #expect(EXIFWriter.read(from: photo) == second)
        let layout = try #require(photo.withUnsafeBytes { JPEGFrame.layout($0) })
        let app1 = layout.segments.filter { $0.marker == 0xE1 }
        #expect(app1.count == 1)
        // Everything but the EXIF segment is the encoder's file.
        let segment = try EXIFWriter.segment(for: second)
        #expect(Array(photo[(2 + segment.count)...]) == Array(jpeg[2...]))
    }

    @Test func framesWithoutEXIFReadAsNil() throws {
        #expect(EXIFWriter.read(from: try JPEGTestSupport.jpeg(1)) == nil)
        #expect(EXIFWriter.read(from: []) == nil)
        #expect(throws: CaptureError.self) { try EXIFWriter.insert(EXIFMetadata(), into: [1, 2, 3]) }
        #expect(throws: CaptureError.self) { try EXIFWriter.segment(for: EXIFMetadata(orientation: 9)) }
        #expect(throws: CaptureError.self) {
            try EXIFWriter.segment(for: EXIFMetadata(userComment: String(repeating: "x", count: 70_000)))
        }
    }

    @Test func orientationFollowsRotationAndMirroring() {
        let plain: [(Double, Int)] = [(0, 1), (90, 6), (180, 3), (270, 8), (360, 1), (-90, 8), (450, 6)]
        for (angle, value) in plain {
            #expect(EXIFWriter.orientation(rotationAngle: angle, isMirrored: false) == value)
        }
        let mirrored: [(Double, Int)] = [(0, 2), (90, 7), (180, 4), (270, 5)]
        for (angle, value) in mirrored {
            #expect(EXIFWriter.orientation(rotationAngle: angle, isMirrored: true) == value)
        }
        #expect(EXIFWriter.orientation(rotationAngle: 45, isMirrored: false) == nil)
        #expect(EXIFWriter.orientation(rotationAngle: .infinity, isMirrored: false) == nil)
    }

    @Test func captureDateUsesTheTimeZone() {
        var metadata = EXIFMetadata()
        metadata.setCaptureDate(
            Date(timeIntervalSince1970: 1_700_000_000), timeZone: TimeZone(secondsFromGMT: -16_200)!)
        #expect(metadata.dateTimeOriginal == "2023:11:14 17:43:20")
        #expect(metadata.offsetTimeOriginal == "-04:30")
    }
}
