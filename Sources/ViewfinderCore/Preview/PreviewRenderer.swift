import CYUV

/// What a preview layer asks its renderer for, read once per negotiation.
package struct PreviewRenderRequest: Sendable, Hashable {
    /// The layer's bounds in pixels (zero: nothing is rendered).
    package var size = CaptureDevice.Dimensions(width: 0, height: 0)
    package var gravity = LayerVideoGravity.resizeAspect
    /// The connection's rotation (clockwise degrees) and mirroring.
    package var rotationAngle: Double = 0
    package var mirrored = false
    /// Whether some presenter takes the camera's JPEG, and whether some presenter needs BGRA.
    package var acceptsJPEG = false
    package var needsBGRA = true
}

/// The negotiated path from a camera frame to a ``PreviewFrame`` for one configuration: the
/// processor chain that scales (with the converters' libyuv or libswscale scalers) to the size
/// the gravity asks, turns and mirrors as the connection says, then crops (fill) or places the
/// picture on black (aspect); and whether Motion-JPEG frames that already fit pass through.
///
/// Thread safety: immutable once built; `render` runs on one delivery queue at a time.
package final class PreviewRenderer: Sendable {
    package let deviceFormat: CaptureDevice.Format
    package let request: PreviewRenderRequest
    /// The pixel plan, `nil` when the layer has no size.
    package let plan: PreviewGeometry.PixelPlan?
    /// The BGRA chain, `nil` when no presenter needs BGRA (or the layer has no size).
    package let chain: ProcessorChain?
    /// Whether the camera's Motion-JPEG frames are handed over as they are.
    package let passesJPEG: Bool

    package init(deviceFormat: CaptureDevice.Format, request: PreviewRenderRequest, budget: Int) throws(CaptureError) {
        self.deviceFormat = deviceFormat
        self.request = request
        let size = request.size
        guard size.width > 0, size.height > 0 else {
            plan = nil
            chain = nil
            passesJPEG = false
            return
        }
        try PixelBuffer.checkDimensions(
            width: size.pixelWidth, height: size.pixelHeight, what: "a preview layer's bounds")
        let geometry = PreviewGeometry(
            imageSize: .zero, bounds: .zero, gravity: request.gravity, rotationAngle: request.rotationAngle,
            mirrored: request.mirrored)
        let plan = PreviewGeometry.pixelPlan(
            image: deviceFormat.dimensions, output: size, gravity: request.gravity,
            quarterTurns: geometry.quarterTurns)
        self.plan = plan
        let fits = deviceFormat.pixelFormat == .mjpeg && deviceFormat.dimensions == size
        passesJPEG = request.acceptsJPEG && fits && geometry.quarterTurns == 0 && !request.mirrored
        guard request.needsBGRA || !passesJPEG else {
            chain = nil
            return
        }
        var processors: [NamedProcessor] = []
        if geometry.quarterTurns != 0 {
            processors.append(
                NamedProcessor(name: "preview.rotation", processor: try RotateProcessor(angle: request.rotationAngle)))
        }
        if request.mirrored {
            processors.append(NamedProcessor(name: "preview.mirroring", processor: MirrorProcessor()))
        }
        if plan.crops {
            let crop = try CropProcessor(
                x: plan.offsetX, y: plan.offsetY, width: size.pixelWidth, height: size.pixelHeight)
            processors.append(NamedProcessor(name: "preview.fill", processor: crop))
        } else if plan.letterboxes {
            processors.append(
                NamedProcessor(
                    name: "preview.letterbox",
                    processor: LetterboxProcessor(
                        canvas: size, x: plan.offsetX, y: plan.offsetY, pictureSize: plan.shownSize)))
        }
        let device = deviceFormat.dimensions
        chain = try ProcessorChain(
            deviceFormat: FrameFormat(
                pixelFormat: deviceFormat.pixelFormat, width: device.pixelWidth, height: device.pixelHeight),
            requestedFormat: .bgra, requestedSize: plan.scaledSize, processors: processors, budget: budget,
            decoderLanes: 1)
    }

    /// Renders `sample` (on the delivery queue): the frame to hand over, or why not.
    package func render(_ sample: CapturedSample) -> DeliveryEngine<PreviewRenderer, PreviewFrame>.Preparation {
        guard let image = sample.image else { return .dropped(.droppedByProcessor("not video")) }
        guard plan != nil else { return .dropped(.droppedByProcessor("preview layer has no size")) }
        var rendered: PixelBuffer?
        if let chain {
            switch chain.run(image, of: sample) {
            case .image(let buffer, _): rendered = buffer
            case .drop(let reason): return .dropped(reason)
            }
        }
        let frame = PreviewFrame(
            pixelBuffer: rendered, jpegBuffer: passesJPEG ? image : nil, width: request.size.pixelWidth,
            height: request.size.pixelHeight, presentationTimeStamp: sample.presentationTime,
            sequenceNumber: sample.sequenceNumber, hostArrivalTime: sample.hostArrivalTime)
        return .ready(frame, holdsSlot: false)
    }
}

/// Places a BGRA picture on a black canvas (the bands of `.resizeAspect`): libyuv `ARGBCopy`
/// for the picture, `ARGBRect` for the bands only.
///
/// Thread safety: immutable.
package final class LetterboxProcessor: FrameProcessor {
    package let canvas: CaptureDevice.Dimensions
    package let x: Int
    package let y: Int
    package let pictureSize: CaptureDevice.Dimensions
    /// Opaque black, as libyuv's ARGB word (bytes B, G, R, A in memory).
    private static let black: UInt32 = 0xFF00_0000

    package init(canvas: CaptureDevice.Dimensions, x: Int, y: Int, pictureSize: CaptureDevice.Dimensions) {
        self.canvas = canvas
        self.x = x
        self.y = y
        self.pictureSize = pictureSize
    }

    package var acceptedPixelFormats: [PixelFormat] { [.bgra] }

    package func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard input.pixelFormat == .bgra, input.size == pictureSize, x >= 0, y >= 0,
            x + input.width <= canvas.width, y + input.height <= canvas.height
        else {
            throw CaptureError(
                .unsupportedFormat,
                "the preview letterbox places a BGRA \(pictureSize) picture on \(canvas), not \(input): this is a bug, please report it"
            )
        }
        return FrameFormat(pixelFormat: .bgra, width: canvas.pixelWidth, height: canvas.pixelHeight)
    }

    package func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "the preview letterbox")
        let canvasBase = BuiltIn.pixels(destination, 0)
        let stride = BuiltIn.stride(destination, 0)
        let (w, h) = (Int32(canvas.width), Int32(canvas.height))
        let (px, py, pw, ph) = (Int32(x), Int32(y), Int32(source.width), Int32(source.height))
        // The bands: above, below, left and right of the picture.
        if py > 0 { ARGBRect(canvasBase, stride, 0, 0, w, py, Self.black) }
        if py + ph < h { ARGBRect(canvasBase, stride, 0, py + ph, w, h - py - ph, Self.black) }
        if px > 0 { ARGBRect(canvasBase, stride, 0, py, px, ph, Self.black) }
        if px + pw < w { ARGBRect(canvasBase, stride, px + pw, py, w - px - pw, ph, Self.black) }
        let target = canvasBase + Int(py) * Int(stride) + Int(px) * 4
        ARGBCopy(BuiltIn.pixels(source, 0), BuiltIn.stride(source, 0), target, stride, pw, ph)
        frame.image = destination
        return .keep
    }
}
