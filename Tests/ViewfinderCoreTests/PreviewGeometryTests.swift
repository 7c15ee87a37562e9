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

/// The preview layer's geometry against AVFoundation's definitions: device (0,0) is the top-left
/// and (1,1) the bottom-right of the unrotated, unmirrored picture; the picture shown is turned
/// clockwise, then mirrored, then placed by the gravity.
@Suite("Preview layer geometry")
struct PreviewGeometryTests {
    static let gravities: [LayerVideoGravity] = [.resizeAspect, .resizeAspectFill, .resize]
    static let angles: [Double] = [0, 90, 180, 270]
    static let mirrorings = [false, true]

    /// A gravity, a rotation and a mirroring: every one of the 24 combinations.
    struct Setup: Sendable, CustomTestStringConvertible {
        var gravity: LayerVideoGravity
        var angle: Double
        var mirrored: Bool
        var testDescription: String { "\(gravity.rawValue) \(Int(angle))°\(mirrored ? " mirrored" : "")" }
    }
    static let setups: [Setup] = gravities.flatMap { gravity in
        angles.flatMap { angle in mirrorings.map { Setup(gravity: gravity, angle: angle, mirrored: $0) } }
    }
    /// Camera sizes and layer bounds: wider, taller and square layers, origins not at zero.
    static let cases: [(image: CGSize, bounds: CGRect)] = [
        (CGSize(width: 640, height: 480), CGRect(x: 0, y: 0, width: 800, height: 400)),
        (CGSize(width: 1280, height: 720), CGRect(x: 0, y: 0, width: 300, height: 800)),
        (CGSize(width: 640, height: 480), CGRect(x: 0, y: 0, width: 333, height: 333)),
        (CGSize(width: 1920, height: 1080), CGRect(x: 20, y: -10, width: 1000, height: 200)),
        (CGSize(width: 640, height: 480), CGRect(x: 0, y: 0, width: 480, height: 640)),
    ]

    static func geometry(
        _ index: Int, _ gravity: LayerVideoGravity, _ angle: Double, _ mirrored: Bool
    ) -> PreviewGeometry {
        PreviewGeometry(
            imageSize: cases[index].image, bounds: cases[index].bounds, gravity: gravity, rotationAngle: angle,
            mirrored: mirrored)
    }

    static func close(_ a: CGPoint, _ b: CGPoint, tolerance: CGFloat = 1e-9) -> Bool {
        abs(a.x - b.x) <= tolerance * max(1, abs(b.x)) && abs(a.y - b.y) <= tolerance * max(1, abs(b.y))
    }

    // MARK: Where the picture lies

    @Test("the picture's rectangle follows the gravity", arguments: gravities, angles)
    func contentRectangle(gravity: LayerVideoGravity, angle: Double) {
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, gravity, angle, false)
            let content = geometry.contentRect
            let bounds = Self.cases[index].bounds
            let image = Self.cases[index].image
            // The shown aspect ratio is the image's, turned by quarter turns.
            let quarter = Int(angle) % 180 == 90
            let shownAspect = quarter ? image.height / image.width : image.width / image.height
            // Centred always.
            #expect(abs(content.midX - bounds.midX) < 1e-9 && abs(content.midY - bounds.midY) < 1e-9)
            switch gravity {
            case .resize:
                #expect(content == bounds)
            case .resizeAspect:
                #expect(abs(content.width / content.height - shownAspect) < 1e-9)
                #expect(bounds.insetBy(dx: -1e-9, dy: -1e-9).contains(content))
                // It touches the bounds on one axis.
                #expect(abs(content.width - bounds.width) < 1e-9 || abs(content.height - bounds.height) < 1e-9)
            default:
                #expect(abs(content.width / content.height - shownAspect) < 1e-9)
                #expect(content.insetBy(dx: -1e-9, dy: -1e-9).contains(bounds))
                #expect(abs(content.width - bounds.width) < 1e-9 || abs(content.height - bounds.height) < 1e-9)
            }
        }
    }

    // MARK: Corners: the definition of rotation and mirroring

    /// Device corners in clockwise order: top-left, top-right, bottom-right, bottom-left.
    static let deviceCorners = [CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 0), CGPoint(x: 1, y: 1), CGPoint(x: 0, y: 1)]

    static func corners(of rect: CGRect) -> [CGPoint] {
        [
            CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
            CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY),
        ]
    }

    @Test(
        "each corner of the sensor's picture shows where a clockwise turn, then a mirror, puts it",
        arguments: setups)
    func cornersLandWhereTheTurnPutsThem(setup: Setup) {
        let (gravity, angle, mirrored) = (setup.gravity, setup.angle, setup.mirrored)
        let turns = Int(angle) / 90
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, gravity, angle, mirrored)
            let shownCorners = Self.corners(of: geometry.contentRect)
            for (corner, devicePoint) in Self.deviceCorners.enumerated() {
                // A clockwise quarter turn moves each corner one place on clockwise.
                var shown = (corner + turns) % 4
                // Mirroring swaps left and right: TL<->TR, BR<->BL.
                if mirrored { shown = [1, 0, 3, 2][shown] }
                let layerPoint = geometry.layerPoint(fromDevicePoint: devicePoint)
                #expect(
                    Self.close(layerPoint, shownCorners[shown]),
                    "case \(index): device corner \(devicePoint) at \(layerPoint), expected \(shownCorners[shown])")
                #expect(Self.close(geometry.devicePoint(fromLayerPoint: shownCorners[shown]), devicePoint))
            }
            // The centre stays the centre.
            let centre = CGPoint(x: geometry.contentRect.midX, y: geometry.contentRect.midY)
            #expect(Self.close(geometry.devicePoint(fromLayerPoint: centre), CGPoint(x: 0.5, y: 0.5)))
        }
    }

    @Test("a quarter turn without mirroring: the sensor's top edge runs down the layer's right side")
    func quarterTurnExample() {
        // 640x480 sensor, 480x640 layer: with a 90° turn the picture fills it exactly.
        let geometry = PreviewGeometry(
            imageSize: CGSize(width: 640, height: 480), bounds: CGRect(x: 0, y: 0, width: 480, height: 640),
            gravity: .resizeAspect, rotationAngle: 90)
        #expect(Self.close(geometry.layerPoint(fromDevicePoint: CGPoint(x: 0, y: 0)), CGPoint(x: 480, y: 0)))
        #expect(Self.close(geometry.layerPoint(fromDevicePoint: CGPoint(x: 0.25, y: 0)), CGPoint(x: 480, y: 160)))
        #expect(Self.close(geometry.devicePoint(fromLayerPoint: CGPoint(x: 0, y: 640)), CGPoint(x: 1, y: 1)))
    }

    // MARK: Round trips

    static let probePoints: [CGPoint] = {
        var points: [CGPoint] = []
        for x in stride(from: -0.25, through: 1.25, by: 0.125) {
            for y in stride(from: -0.25, through: 1.25, by: 0.1875) { points.append(CGPoint(x: x, y: y)) }
        }
        return points
    }()

    @Test("layer → device → layer and device → layer → device are exact", arguments: setups)
    func roundTrips(setup: Setup) {
        let (gravity, angle, mirrored) = (setup.gravity, setup.angle, setup.mirrored)
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, gravity, angle, mirrored)
            let bounds = Self.cases[index].bounds
            for unit in Self.probePoints {
                let layerPoint = CGPoint(
                    x: bounds.minX + unit.x * bounds.width, y: bounds.minY + unit.y * bounds.height)
                let device = geometry.devicePoint(fromLayerPoint: layerPoint)
                #expect(Self.close(geometry.layerPoint(fromDevicePoint: device), layerPoint, tolerance: 1e-9))
                let back = geometry.devicePoint(fromLayerPoint: geometry.layerPoint(fromDevicePoint: unit))
                #expect(Self.close(back, unit, tolerance: 1e-9))
            }
        }
    }

    @Test("rectangles convert both ways, and the picture's rectangle is the unit square", arguments: setups)
    func rectangles(setup: Setup) {
        let (gravity, angle, mirrored) = (setup.gravity, setup.angle, setup.mirrored)
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, gravity, angle, mirrored)
            let unit = geometry.deviceRect(fromLayerRect: geometry.contentRect)
            #expect(
                Self.close(unit.origin, .zero)
                    && Self.close(CGPoint(x: unit.width, y: unit.height), CGPoint(x: 1, y: 1)))
            let metadata = CGRect(x: 0.1, y: 0.2, width: 0.3, height: 0.5)
            let layerRect = geometry.layerRect(fromDeviceRect: metadata)
            let back = geometry.deviceRect(fromLayerRect: layerRect)
            #expect(Self.close(back.origin, metadata.origin))
            #expect(Self.close(CGPoint(x: back.width, y: back.height), CGPoint(x: 0.3, y: 0.5)))
            // A quarter turn swaps which layer side the metadata rect's width runs along.
            let content = geometry.contentRect
            let quarter = Int(angle) % 180 == 90
            let expectedWidth = (quarter ? 0.5 : 0.3) * content.width
            #expect(abs(layerRect.width - expectedWidth) < 1e-6)
            // Every corner of the layer rect converts to a corner of the metadata rect.
            let metadataCorners = Self.corners(of: metadata)
            for corner in Self.corners(of: layerRect) {
                let device = geometry.devicePoint(fromLayerPoint: corner)
                #expect(metadataCorners.contains { Self.close($0, device, tolerance: 1e-9) })
            }
        }
    }

    // MARK: Bands and cropping

    @Test("points in the black bands of .resizeAspect lie outside the picture", arguments: angles, mirrorings)
    func letterboxBands(angle: Double, mirrored: Bool) {
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, .resizeAspect, angle, mirrored)
            let content = geometry.contentRect
            let bounds = Self.cases[index].bounds
            var bandPoints: [CGPoint] = []
            if content.minX - bounds.minX > 1 {
                bandPoints += [
                    CGPoint(x: (bounds.minX + content.minX) / 2, y: bounds.midY),
                    CGPoint(x: (bounds.maxX + content.maxX) / 2, y: bounds.midY),
                ]
            }
            if content.minY - bounds.minY > 1 {
                bandPoints += [
                    CGPoint(x: bounds.midX, y: (bounds.minY + content.minY) / 2),
                    CGPoint(x: bounds.midX, y: (bounds.maxY + content.maxY) / 2),
                ]
            }
            for point in bandPoints {
                let device = geometry.devicePoint(fromLayerPoint: point)
                let inside = (0...1).contains(device.x) && (0...1).contains(device.y)
                #expect(!inside, "case \(index): band point \(point) converted to \(device), inside the picture")
            }
            // Points just inside the picture are inside.
            let inner = content.insetBy(dx: content.width * 0.01, dy: content.height * 0.01)
            for corner in Self.corners(of: inner) {
                let device = geometry.devicePoint(fromLayerPoint: corner)
                #expect((0...1).contains(device.x) && (0...1).contains(device.y))
            }
        }
    }

    @Test(
        "with .resizeAspectFill every point of the layer shows the picture, and some is cropped", arguments: angles,
        mirrorings)
    func fillCrops(angle: Double, mirrored: Bool) {
        for index in Self.cases.indices {
            let geometry = Self.geometry(index, .resizeAspectFill, angle, mirrored)
            let bounds = Self.cases[index].bounds
            var extent = (
                minX: CGFloat.infinity, maxX: -CGFloat.infinity, minY: CGFloat.infinity, maxY: -CGFloat.infinity
            )
            for corner in Self.corners(of: bounds) {
                let device = geometry.devicePoint(fromLayerPoint: corner)
                #expect((-1e-9...1 + 1e-9).contains(device.x) && (-1e-9...1 + 1e-9).contains(device.y))
                extent = (
                    min(extent.minX, device.x), max(extent.maxX, device.x), min(extent.minY, device.y),
                    max(extent.maxY, device.y)
                )
            }
            let shown = (extent.maxX - extent.minX) * (extent.maxY - extent.minY)
            let image = Self.cases[index].image
            let shownAspect = Int(angle) % 180 == 90 ? image.height / image.width : image.width / image.height
            let sameAspect = abs(shownAspect - bounds.width / bounds.height) < 1e-9
            #expect(sameAspect ? abs(shown - 1) < 1e-9 : shown < 1 - 1e-6)
        }
    }

    // MARK: The renderer's pixel plan

    @Test("the pixel plan is the picture's rectangle to the pixel", arguments: gravities, angles)
    func pixelPlanMatchesRectangle(gravity: LayerVideoGravity, angle: Double) {
        for (image, bounds) in Self.cases {
            let output = CaptureDevice.Dimensions(width: Int(bounds.width), height: Int(bounds.height))
            let geometry = PreviewGeometry(
                imageSize: image, bounds: CGRect(origin: .zero, size: bounds.size), gravity: gravity,
                rotationAngle: angle)
            let plan = PreviewGeometry.pixelPlan(
                image: .init(width: Int(image.width), height: Int(image.height)), output: output, gravity: gravity,
                quarterTurns: geometry.quarterTurns)
            let content = geometry.contentRect
            #expect(plan.outputSize == output)
            #expect(abs(CGFloat(plan.shownSize.width) - content.width) <= 1)
            #expect(abs(CGFloat(plan.shownSize.height) - content.height) <= 1)
            let quarter = geometry.quarterTurns % 2 == 1
            #expect(plan.scaledSize.width == (quarter ? plan.shownSize.height : plan.shownSize.width))
            switch gravity {
            case .resizeAspectFill:
                #expect(!plan.letterboxes)
                #expect(
                    abs(CGFloat(-plan.offsetX) - content.minX) <= 1 && abs(CGFloat(-plan.offsetY) - content.minY) <= 1)
            case .resizeAspect:
                #expect(!plan.crops)
                #expect(
                    abs(CGFloat(plan.offsetX) - content.minX) <= 1 && abs(CGFloat(plan.offsetY) - content.minY) <= 1)
            default:
                #expect(!plan.crops && !plan.letterboxes && plan.offsetX == 0 && plan.offsetY == 0)
            }
        }
    }

    @Test("an unknown picture size or an empty layer gives finite points")
    func degenerate() {
        let unknown = PreviewGeometry(imageSize: .zero, bounds: CGRect(x: 0, y: 0, width: 200, height: 100))
        #expect(Self.close(unknown.devicePoint(fromLayerPoint: CGPoint(x: 100, y: 50)), CGPoint(x: 0.5, y: 0.5)))
        let empty = PreviewGeometry(imageSize: CGSize(width: 640, height: 480), bounds: .zero)
        let point = empty.devicePoint(fromLayerPoint: CGPoint(x: 3, y: 4))
        #expect(point.x.isFinite && point.y.isFinite)
    }
}
