import Foundation
import Testing
import ViewfinderCore
import ViewfinderMetadata
import ViewfinderTesting

/// Whether two rectangles agree within `tolerance` on every edge.
func close(_ actual: CGRect, _ expected: CGRect, tolerance: CGFloat) -> Bool {
    abs(actual.minX - expected.minX) <= tolerance && abs(actual.minY - expected.minY) <= tolerance
        && abs(actual.maxX - expected.maxX) <= tolerance && abs(actual.maxY - expected.maxY) <= tolerance
}

@Suite("Output rect conversions, and what a Linux camera cannot detect")
struct MetadataRectConversionTests {
    @Test("a video data output's pixels: turned and mirrored as its connection delivers, and back")
    func videoDataOutputRects() throws {
        let rig = try MetadataRig(withVideoOutput: true)  // a 640 x 480 camera
        let connection = try #require(rig.video.connection(with: .video))
        let rect = CGRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4)

        // Unturned: scaled to the frame's pixels.
        #expect(
            close(
                rig.video.outputRectConverted(fromMetadataOutputRect: rect),
                CGRect(x: 64, y: 96, width: 192, height: 192), tolerance: 1e-9))
        // A quarter turn clockwise: 480 x 640 frames; (x, y) shows at (1 - y, x).
        try connection.setVideoRotationAngle(90)
        let turned = rig.video.outputRectConverted(fromMetadataOutputRect: rect)
        #expect(close(turned, CGRect(x: 192, y: 64, width: 192, height: 192), tolerance: 1e-9), "\(turned)")
        // Mirrored as well: (y, x).
        try connection.setVideoMirrored(true)
        let mirrored = rig.video.outputRectConverted(fromMetadataOutputRect: rect)
        #expect(close(mirrored, CGRect(x: 96, y: 64, width: 192, height: 192), tolerance: 1e-9), "\(mirrored)")
        // And back: the output's rectangle is the metadata rectangle again.
        #expect(close(rig.video.metadataOutputRectConverted(fromOutputRect: mirrored), rect, tolerance: 1e-9))
        for angle in [0.0, 180, 270] {
            try connection.setVideoRotationAngle(angle)
            let there = rig.video.outputRectConverted(fromMetadataOutputRect: rect)
            #expect(close(rig.video.metadataOutputRectConverted(fromOutputRect: there), rect, tolerance: 1e-9))
        }
    }

    @Test("a code's bounds converted to a turned output's pixels are where the turned frame shows the code")
    func agreesWithTheDeliveredFrame() throws {
        let rig = try MetadataRig(withVideoOutput: true)
        try rig.start(types: [.qr])
        var frame = CodeFrame()
        frame.draw(try Symbol.qr("rect conversion"), x: 150, y: 90, module: 6)
        let code = try #require(try rig.scan(frame).first)
        let connection = try #require(rig.video.connection(with: .video))
        try connection.setVideoRotationAngle(270)
        let converted = rig.video.outputRectConverted(fromMetadataOutputRect: code.bounds)

        // The frame as that connection delivers it, scanned on its own: its code's bounds in pixels.
        let shown = frame.delivered(quarterTurns: 3, mirrored: false)
        let shownRig = try MetadataRig(width: shown.width, height: shown.height)
        try shownRig.start(types: [.qr])
        let found = try #require(try shownRig.scan(shown).first)
        let pixels = CGRect(
            x: found.bounds.minX * CGFloat(shown.width), y: found.bounds.minY * CGFloat(shown.height),
            width: found.bounds.width * CGFloat(shown.width), height: found.bounds.height * CGFloat(shown.height))
        #expect(close(converted, pixels, tolerance: 3), "\(converted) vs \(pixels)")
    }

    @Test("a photo output's pixels are unturned (orientation is metadata); the metadata output's are its own")
    func photoAndMetadataOutputs() throws {
        let rig = try MetadataRig()
        let photo = CapturePhotoOutput()
        try rig.session.tryAddOutput(photo)
        let connection = try #require(photo.connection(with: .video))
        try connection.setVideoRotationAngle(90)
        let rect = CGRect(x: 0.5, y: 0.25, width: 0.25, height: 0.5)
        #expect(
            close(
                photo.outputRectConverted(fromMetadataOutputRect: rect),
                CGRect(x: 320, y: 120, width: 160, height: 240), tolerance: 1e-9))
        #expect(
            close(
                photo.metadataOutputRectConverted(fromOutputRect: CGRect(x: 0, y: 0, width: 640, height: 480)),
                CGRect(x: 0, y: 0, width: 1, height: 1), tolerance: 1e-9))
        #expect(rig.output.outputRectConverted(fromMetadataOutputRect: rect) == rect)
        #expect(rig.output.metadataOutputRectConverted(fromOutputRect: rect) == rect)
        // Not connected to a camera: nothing to convert by.
        #expect(CaptureVideoDataOutput().outputRectConverted(fromMetadataOutputRect: rect) == rect)
    }

    @Test("faces, bodies and salient objects are never available, as on a device without those detectors")
    func noFacesOrBodies() throws {
        let rig = try MetadataRig()
        let available = rig.output.availableMetadataObjectTypes
        #expect(!available.isEmpty)
        let undetectable: [MetadataObject.ObjectType] = [
            .face, .humanBody, .humanFullBody, .catBody, .dogBody, .catHead, .dogHead, .salientObject,
        ]
        #expect(undetectable.allSatisfy { !available.contains($0) })
        let error = #expect(throws: CaptureError.self) { try rig.output.setMetadataObjectTypes([.qr, .face]) }
        #expect(error?.code == .invalidArgument)
        #expect(rig.output.metadataObjectTypes == [])
        #expect(rig.output.requiredMetadataObjectTypesForCinematicVideoCapture.isEmpty)

        try rig.start(types: [.qr])
        var frame = CodeFrame()
        frame.draw(try Symbol.qr("identity"), x: 200, y: 100, module: 6)
        let code = try #require(try rig.scan(frame).first)
        let object: MetadataObject = code  // as a delegate receives it
        #expect(
            !(object is MetadataFaceObject) && !(object is MetadataBodyObject) && !(object is MetadataSalientObject))
        #expect(code.objectID == -1 && code.groupID == -1)
        #expect(code.cinematicVideoFocusMode == .none && !code.isFixedFocus)
    }

    @Test("a metadata input joins a session but connects to nothing, and appending says why")
    func metadataInput() throws {
        let rig = try MetadataRig(withVideoOutput: true)
        let connectionsBefore = rig.session.connections.count
        let input = CaptureMetadataInput(
            formatDescription: .video(pixelFormat: .bgra, dimensions: .init(width: 1, height: 1)), clock: HostClock())
        #expect(input.ports.map(\.mediaType) == [.metadata])
        #expect(rig.session.canAddInput(input))
        try rig.session.tryAddInput(input)
        #expect(rig.session.inputs.contains { $0 === input })
        #expect(rig.session.connections.count == connectionsBefore, "no output takes timed metadata")

        let item = MutableMetadataItem()
        item.identifier = "mdta/com.apple.quicktime.location.ISO6709"
        item.value = "+48.8577+002.295/"
        let group = TimedMetadataGroup(
            items: [item], timeRange: MediaTimeRange(start: HostClock().now(), duration: .invalid))
        let error = #expect(throws: CaptureError.self) { try input.append(group) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("metadata track") == true)
        rig.session.removeInput(input)
    }
}
