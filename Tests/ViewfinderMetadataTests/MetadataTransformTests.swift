import Foundation
import Testing
import ViewfinderCore
import ViewfinderMetadata
import ViewfinderTesting

extension CodeFrame {
    /// The frame as a connection turned `quarterTurns` clockwise and then (if `mirrored`) flipped
    /// left to right delivers it: the pixels moved here, by the test's own arithmetic.
    func delivered(quarterTurns: Int, mirrored: Bool) -> CodeFrame {
        var turned = self
        for _ in 0..<quarterTurns {
            let source = turned
            var next = CodeFrame(pixelFormat: pixelFormat, width: source.height, height: source.width)
            // Clockwise: the source's row r becomes the destination's column (height - 1 - r).
            for row in 0..<source.height {
                for column in 0..<source.width {
                    next.luma[column * next.width + (source.height - 1 - row)] =
                        source.luma[row * source.width + column]
                }
            }
            turned = next
        }
        if mirrored {
            let source = turned
            for row in 0..<source.height {
                for column in 0..<source.width {
                    turned.luma[row * source.width + column] =
                        source.luma[row * source.width + source.width - 1 - column]
                }
            }
        }
        return turned
    }
}

@Suite("Metadata objects in other coordinates")
struct MetadataTransformTests {
    static let orientations: [(angle: Double, mirrored: Bool)] = [
        (0, false), (90, false), (180, false), (270, false), (0, true), (90, true), (180, true), (270, true),
    ]

    @Test(
        "a video data output's transformedMetadataObject puts the corners where its turned, mirrored frames show them",
        arguments: 0..<8)
    func videoDataOutput(index: Int) throws {
        let (angle, mirrored) = Self.orientations[index]
        // ZXing-cpp 1.4 reads QR codes only as printed, not mirrored; a mirrored barcode reads
        // backwards, which it tries.
        let type: MetadataObject.ObjectType = mirrored ? .code128 : .qr
        let rig = try MetadataRig(withVideoOutput: true)
        try rig.start(types: [type])
        var frame = CodeFrame()
        if mirrored {
            frame.draw(try Symbol.zint(20, "orientation \(index)", barHeight: 40), x: 120, y: 70, module: 2)
        } else {
            frame.draw(try Symbol.qr("orientation \(index)"), x: 120, y: 70, module: 6)
        }
        let code = try #require(try rig.scan(frame).first)

        let connection = try #require(rig.video.connection(with: .video))
        try connection.setVideoRotationAngle(angle)
        try connection.setVideoMirrored(mirrored)
        let transformed = try #require(
            rig.video.transformedMetadataObject(for: code, connection: connection) as? MetadataMachineReadableCodeObject
        )
        #expect(transformed.stringValue == code.stringValue)
        #expect(transformed.type == type)

        // The same code found in the frame as that connection delivers it: the corners agree.
        let turns = Int(angle / 90)
        let shown = frame.delivered(quarterTurns: turns, mirrored: mirrored)
        let shownRig = try MetadataRig(width: shown.width, height: shown.height)
        try shownRig.start(types: [type])
        let found = try #require(try shownRig.scan(shown).first)
        if mirrored {
            // A barcode read backwards has its corners in another order: the same four points.
            #expect(
                closeAsSet(transformed.corners, found.corners, tolerance: 4 / 480),
                "\(transformed.corners) vs \(found.corners)")
        } else {
            #expect(
                close(transformed.corners, found.corners, tolerance: 3 / 480),
                "\(transformed.corners) vs \(found.corners)")
        }
        #expect(abs(transformed.bounds.minX - found.bounds.minX) <= 3 / 480)
        #expect(abs(transformed.bounds.minY - found.bounds.minY) <= 3 / 480)

        // A connection that is not the output's converts nothing.
        #expect(rig.video.transformedMetadataObject(for: code, connection: rig.connection) == nil)
    }

    @Test("the preview layer's transformedMetadataObject follows its bounds, gravity, rotation and mirroring")
    func previewLayer() throws {
        let rig = try MetadataRig()
        try rig.start(types: [.qr])
        var frame = CodeFrame()
        frame.draw(try Symbol.qr("preview"), x: 320, y: 240, module: 5)
        let code = try #require(try rig.scan(frame).first)

        let layer = CaptureVideoPreviewLayer(session: rig.session)
        let connection = try #require(layer.connection)
        layer.videoGravity = .resize
        layer.frame = CGRect(x: 0, y: 0, width: 300, height: 400)
        try connection.setVideoRotationAngle(90)
        try connection.setVideoMirrored(true)
        let transformed = try #require(layer.transformedMetadataObject(for: code) as? MetadataMachineReadableCodeObject)
        // Turned a quarter clockwise, (x, y) shows at (1 - y, x); mirrored, at (y, x); stretched
        // over 300 x 400.
        let expected = code.corners.map { CGPoint(x: $0.y * 300, y: $0.x * 400) }
        #expect(close(transformed.corners, expected, tolerance: 0.001), "\(transformed.corners) vs \(expected)")
        let rect = layer.layerRectConverted(fromMetadataOutputRect: code.bounds)
        #expect(abs(rect.minX - transformed.bounds.minX) < 0.001 && abs(rect.maxY - transformed.bounds.maxY) < 0.001)
        // Back again: the layer rectangle converts to the code's bounds.
        let back = layer.metadataOutputRectConverted(fromLayerRect: transformed.bounds)
        #expect(abs(back.minX - code.bounds.minX) < 0.001 && abs(back.height - code.bounds.height) < 0.001)

        // Aspect fit letterboxes: a 640 x 480 picture in a 400 x 400 layer, unturned, sits in a
        // 400 x 300 band 50 points down.
        try connection.setVideoRotationAngle(0)
        try connection.setVideoMirrored(false)
        layer.videoGravity = .resizeAspect
        layer.frame = CGRect(x: 0, y: 0, width: 400, height: 400)
        let fitted = try #require(layer.transformedMetadataObject(for: code) as? MetadataMachineReadableCodeObject)
        let fittedExpected = code.corners.map { CGPoint(x: $0.x * 400, y: 50 + $0.y * 300) }
        #expect(close(fitted.corners, fittedExpected, tolerance: 0.001), "\(fitted.corners) vs \(fittedExpected)")
    }
}
