import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting

/// `image`'s pixels in a BGRA pixel buffer (to read the test pattern's number from).
private func buffer(of image: CGImage) throws -> PixelBuffer {
    let target = try JPEGTestSupport.buffer(.bgra, image.width, image.height)
    let data = try #require(image.dataProvider?.data)
    data.withUnsafeBytes { source in
        for row in 0..<image.height {
            target.baseAddress.advanced(by: row * target.bytesPerRow).copyMemory(
                from: source.baseAddress!.advanced(by: row * image.bytesPerRow), byteCount: image.width * 4)
        }
    }
    return target
}

/// The B, G, R, A bytes of pixel (`x`, `y`).
private func pixel(_ image: CGImage, _ x: Int, _ y: Int) throws -> [UInt8] {
    let data = try #require(image.dataProvider?.data)
    let start = y * image.bytesPerRow + x * 4
    return Array(data[start..<(start + 4)])
}

private func near(_ pixel: [UInt8], r: UInt8, g: UInt8, b: UInt8, tolerance: Int = 24) -> Bool {
    abs(Int(pixel[2]) - Int(r)) <= tolerance && abs(Int(pixel[1]) - Int(g)) <= tolerance
        && abs(Int(pixel[0]) - Int(b)) <= tolerance && pixel[3] == 255
}

/// Takes one photo with each of `settings` on a fresh 640 x 480 camera (frame 1) and returns them.
private func takePhotos(_ settings: [CapturePhotoSettings], format: PixelFormat = .nv12VideoRange) throws -> ModesRig {
    let rig = try ModesRig(format)
    rig.session.startRunning()
    try rig.push(0...0)
    for (index, item) in settings.enumerated() { _ = rig.request(at: 0.5 + Double(index) / 100, item) }
    try rig.camera.push(1, arrival: ModesRig.arrival(1))
    #expect(rig.recorder.waitForFinished(settings.count))
    rig.session.stopRunning()
    return rig
}

@Suite("Photo images: CGImage representations and embedded EXIF thumbnails")
struct PhotoImageTests {
    @Test("cgImageRepresentation: the JPEG photo decoded to BGRA, the frame's pixels and colours")
    func cgImage() throws {
        let plain = CapturePhotoSettings()
        let withPreview = CapturePhotoSettings()
        withPreview.previewPhotoFormat = [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA, kCVPixelBufferWidthKey: 160,
        ]
        let uncompressed = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        let rig = try takePhotos([plain, withPreview, uncompressed])

        let photo = try rig.photo(plain)
        let image = try #require(photo.cgImageRepresentation())
        #expect(image.width == 640 && image.height == 480)
        #expect(image.bitsPerComponent == 8 && image.bitsPerPixel == 32 && image.bytesPerRow == 640 * 4)
        #expect(image.dataProvider?.data?.count == 640 * 4 * 480)
        #expect(TestPattern.readSequenceNumber(from: try buffer(of: image)) == 1, "the photo's own frame")
        let rows = TestPattern.barRows(height: 480)
        let middle = (rows.lowerBound + rows.upperBound) / 2
        for (index, color) in TestPattern.barColors.enumerated() {
            let columns = TestPattern.barColumns(index, width: 640)
            let value = try pixel(image, (columns.lowerBound + columns.upperBound) / 2, middle)
            #expect(near(value, r: color.r, g: color.g, b: color.b), "bar \(index): \(value)")
        }
        #expect(photo.previewCGImageRepresentation() == nil, "no preview asked for")

        // Cropping: the red bar (5) alone; a fractional rectangle made integral; clipping; outside.
        let red = TestPattern.barColumns(5, width: 640)
        let bar = try #require(
            image.cropping(
                to: CGRect(x: red.lowerBound, y: rows.lowerBound, width: red.count, height: rows.count)))
        #expect(bar.width == red.count && bar.height == rows.count && bar.bytesPerRow == red.count * 4)
        for (x, y) in [(2, 2), (bar.width / 2, bar.height / 2), (bar.width - 3, bar.height - 3)] {
            #expect(near(try pixel(bar, x, y), r: 191, g: 0, b: 0), "(\(x), \(y))")
        }
        let fractional = try #require(image.cropping(to: CGRect(x: 10.5, y: 20.2, width: 5, height: 5)))
        #expect(fractional.width == 6 && fractional.height == 6)
        #expect(try pixel(fractional, 0, 0) == pixel(image, 10, 20))
        let clipped = try #require(image.cropping(to: CGRect(x: 600, y: -10, width: 100, height: 30)))
        #expect(clipped.width == 40 && clipped.height == 20)
        #expect(image.cropping(to: CGRect(x: 700, y: 0, width: 10, height: 10)) == nil)
        #expect(image.cropping(to: .null) == nil)

        // The preview image asked for, as a CGImage.
        let preview = try #require(try rig.photo(withPreview).previewCGImageRepresentation())
        #expect(preview.width == 160 && preview.height == 120)
        #expect(TestPattern.readSequenceNumber(from: try buffer(of: preview)) == 1)
        #expect(try rig.photo(withPreview).cgImageRepresentation()?.width == 640)

        // An uncompressed photo: its pixel buffer, copied.
        let raw = try rig.photo(uncompressed)
        let rawImage = try #require(raw.cgImageRepresentation())
        #expect(rawImage.width == 640 && rawImage.height == 480)
        #expect(TestPattern.readSequenceNumber(from: try buffer(of: rawImage)) == 1)

        // A failed request's photo has no image.
        #expect(CapturePhoto(failed: photo.resolvedSettings).cgImageRepresentation() == nil)
    }

    @Test("an embedded thumbnail: EXIF IFD1 holds a JPEG of the frame at the size resolved (160 x 120 by default)")
    func embeddedThumbnail() throws {
        let byDefault = CapturePhotoSettings()
        byDefault.embeddedThumbnailPhotoFormat = [VideoCodecKey: VideoCodecType.jpeg]
        let sized = CapturePhotoSettings()
        sized.embeddedThumbnailPhotoFormat = [VideoCodecKey: "jpeg", VideoWidthKey: 320]
        let large = CapturePhotoSettings()
        large.embeddedThumbnailPhotoFormat = [
            VideoCodecKey: VideoCodecType.jpeg, VideoWidthKey: 4000, VideoHeightKey: 4000,
        ]
        let none = CapturePhotoSettings()
        let hevc = CapturePhotoSettings()
        hevc.embeddedThumbnailPhotoFormat = [VideoCodecKey: VideoCodecType.hevc]
        let uncompressed = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        #expect(uncompressed.availableEmbeddedThumbnailPhotoCodecTypes.isEmpty)
        #expect(byDefault.availableEmbeddedThumbnailPhotoCodecTypes == [.jpeg])
        uncompressed.embeddedThumbnailPhotoFormat = [VideoCodecKey: VideoCodecType.jpeg]
        let rig = try takePhotos([byDefault, sized, large, none, hevc, uncompressed], format: .yuyv)

        for (settings, width, height) in [(byDefault, 160, 120), (sized, 320, 240), (large, 640, 480)] {
            let photo = try rig.photo(settings)
            let size = CaptureDevice.Dimensions(width: Int32(width), height: Int32(height))
            #expect(photo.resolvedSettings.embeddedThumbnailDimensions == size)
            let format = try #require(photo.embeddedThumbnailPhotoFormat)
            #expect(format[VideoCodecKey] as? VideoCodecType == .jpeg)
            #expect(format[VideoWidthKey] as? Int == width && format[VideoHeightKey] as? Int == height)
            let file = [UInt8](try #require(photo.fileDataRepresentation()))
            // The APP1 segment stays within its 64 KiB and the rest of the EXIF is intact.
            #expect(file[2] == 0xFF && file[3] == 0xE1)
            #expect(EXIFWriter.read(from: file)?.software == "Viewfinder")
            #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
            // libexif finds the thumbnail; it decodes at the size resolved and shows the frame.
            let thumbnail = try #require(EXIFWriter.thumbnail(from: file))
            #expect(
                try PhotoTestSupport.patternNumber(thumbnail, width: width, height: height) == 1,
                "\(width)x\(height)")
        }
        let plain = try rig.photo(none)
        #expect(plain.embeddedThumbnailPhotoFormat == nil)
        #expect(plain.resolvedSettings.embeddedThumbnailDimensions == CaptureDevice.Dimensions(width: 0, height: 0))
        #expect(EXIFWriter.thumbnail(from: [UInt8](try #require(plain.fileDataRepresentation()))) == nil)
        for refused in [hevc, uncompressed] {
            let failed = try #require(rig.recorder.results(refused.uniqueID).first)
            #expect(failed.error?.code == .invalidArgument)
            #expect(rig.recorder.kinds(refused.uniqueID) == PhotoRecorder.expectedOrder)
        }
    }

    @Test(
        "a thumbnail that does not fit at the photo's quality is embedded at a lower one, or fails with a typed error")
    func thumbnailQualityLowered() throws {
        // Noise hardly compresses: at quality 0.9 a 640 x 480 JPEG of it is far past the 64 KiB segment.
        let noise = try JPEGTestSupport.buffer(.bgra, 640, 480)
        var state: UInt32 = 12345
        let bytes = noise.baseAddress.assumingMemoryBound(to: UInt8.self)
        for index in 0..<(noise.bytesPerRow * 480) {
            state = state &* 1_103_515_245 &+ 12345
            bytes[index] = index % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: state >> 16)
        }
        let atPhotoQuality = try JPEGEncoder(quality: 0.9).encode(noise)
        #expect(atPhotoQuality.count > 65_535)
        let worker = PhotoWorker()
        worker.beginFrame()
        defer { worker.endFrame() }
        let size = CaptureDevice.Dimensions(width: 640, height: 480)
        do {
            let file = try worker.file(noise, quality: 0.9, metadata: EXIFMetadata(), thumbnail: size, shared: nil)
            let thumbnail = try #require(EXIFWriter.thumbnail(from: file))
            #expect(thumbnail.count < 65_533 && thumbnail.count < atPhotoQuality.count, "a lower quality was used")
            #expect(Int(file[4]) << 8 | Int(file[5]) <= 65_535)
        } catch let error as CaptureError {
            #expect(error.code == .invalidArgument, "\(error)")
        }
        // A small one fits.
        let file = try worker.file(
            noise, quality: 0.9, metadata: EXIFMetadata(), thumbnail: CaptureDevice.Dimensions(width: 160, height: 120),
            shared: nil)
        #expect(EXIFWriter.thumbnail(from: file) != nil)
    }

    @Test("a Motion-JPEG camera's photo: the camera's JPEG decoded as a CGImage, and a thumbnail of its frame")
    func motionJPEGCamera() throws {
        let camera = JPEGFrameCamera()
        let photos = CapturePhotoOutput()
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: CaptureDevice(backend: camera)))
        try session.tryAddOutput(photos)
        session.startRunning()
        #expect(session.isRunning)
        defer { session.stopRunning() }
        let recorder = PhotoRecorder()
        let settings = CapturePhotoSettings()
        settings.embeddedThumbnailPhotoFormat = [VideoCodecKey: VideoCodecType.jpeg, VideoHeightKey: 96]
        settings.previewPhotoFormat = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        photos.capturePhoto(with: settings, delegate: recorder)
        #expect(camera.push(try JPEGTestSupport.jpeg(7), sequence: 7))
        #expect(recorder.waitForFinished(1))
        let result = try #require(recorder.results(settings.uniqueID).first)
        #expect(result.error == nil)
        let photo = result.photo
        let image = try #require(photo.cgImageRepresentation())
        #expect(image.width == 640 && image.height == 480)
        #expect(TestPattern.readSequenceNumber(from: try buffer(of: image)) == 7)
        let preview = try #require(photo.previewCGImageRepresentation())
        #expect(preview.width == 640 && preview.height == 480)
        // Height 96 asked: the box is 640 wide at most, so 128 x 96.
        #expect(photo.resolvedSettings.embeddedThumbnailDimensions == CaptureDevice.Dimensions(width: 128, height: 96))
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        let thumbnail = try #require(EXIFWriter.thumbnail(from: file))
        #expect(try PhotoTestSupport.patternNumber(thumbnail, width: 128, height: 96) == 7)
    }

    @Test("a deferred photo proxy embeds the thumbnail when it is processed")
    func deferredProxyThumbnail() throws {
        let rig = try ModesRig()
        let proxies = ProxyRecorder()
        rig.photos.isAutoDeferredPhotoDeliveryEnabled = true
        rig.session.startRunning()
        try rig.push(0...1)
        let settings = CapturePhotoSettings()
        settings.embeddedThumbnailPhotoFormat = [VideoCodecKey: VideoCodecType.jpeg]
        rig.photos.capturePhoto(with: settings, delegate: proxies)
        try rig.camera.push(2, arrival: ModesRig.arrival(2))
        #expect(proxies.finished.wait(timeout: .now() + 10) == .success)
        rig.session.stopRunning()
        let proxy = try #require(proxies.proxy)
        #expect(proxy.resolvedSettings.embeddedThumbnailDimensions == CaptureDevice.Dimensions(width: 160, height: 120))
        let file = [UInt8](try #require(proxy.fileDataRepresentation()))
        let thumbnail = try #require(EXIFWriter.thumbnail(from: file))
        #expect(try PhotoTestSupport.patternNumber(thumbnail, width: 160, height: 120) == 2)
        #expect(proxy.cgImageRepresentation()?.width == 640)
    }
}
