import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("Negotiation prefers the native MJPEG decoder")
struct MJPEGNegotiationTests {
    func pick(
        _ device: CaptureDevice, _ preset: CaptureSession.Preset, _ format: PixelFormat? = nil,
        rate: MediaTime = .invalid
    ) throws -> FormatNegotiator.Choice {
        try FormatNegotiator.negotiate(
            device: device, preset: preset, requests: [OutputRequest(pixelFormat: format, minFrameDuration: rate)])
    }

    @Test(
        ".high on the C920 listing picks MJPEG 1920x1080 at 30 fps, for native delivery and for every raw format",
        arguments: [nil, PixelFormat.nv12FullRange, .nv12VideoRange, .bgra, .i420, .yuyv])
    func highPicksMJPEG(format: PixelFormat?) throws {
        let device = try SimulatedRig().device
        let choice = try pick(device, .high, format)
        #expect(choice.format.pixelFormat == .mjpeg)
        #expect(choice.format.dimensions == .init(width: 1920, height: 1080))
        #expect(choice.frameDuration == MediaTime(value: 1, timescale: 30))
    }

    @Test(".hd1280x720 picks MJPEG 720p30 rather than YUYV 720p at 10 fps")
    func hd720PicksMJPEG() throws {
        let device = try SimulatedRig().device
        for format in [nil, PixelFormat.nv12VideoRange, .bgra] {
            let choice = try pick(device, .hd1280x720, format)
            #expect(choice.format.pixelFormat == .mjpeg && choice.format.dimensions.width == 1280)
            #expect(choice.frameDuration == MediaTime(value: 1, timescale: 30))
        }
    }

    @Test("a raw format asked for natively stays zero-copy; a raw mode that keeps the rate beats decoding")
    func rawStaysRaw() throws {
        let device = try SimulatedRig().device
        let yuyv = try pick(device, .vga640x480, .yuyv)
        #expect(yuyv.format.pixelFormat == .yuyv && yuyv.format.dimensions.width == 640)
        #expect(FormatNegotiator.conversionCost(from: yuyv.format, to: OutputRequest(pixelFormat: .yuyv)) == 0)
        #expect(try pick(device, .vga640x480).format.pixelFormat == .yuyv, "native: zero-copy YUYV")
        #expect(try pick(device, .vga640x480, .nv12VideoRange).format.pixelFormat == .yuyv, "one libyuv pass")
        #expect(try pick(device, .vga640x480, .bgra).format.pixelFormat == .yuyv)
    }

    @Test("native decoding beats libv4l2's emulated formats made from the same JPEG frames")
    func nativeBeatsEmulation() throws {
        let device = try SimulatedRig(emulatesRawFormats: true).device
        #expect(device.formats.contains { $0.isEmulated && $0.dimensions.width == 1920 })
        for preset in [CaptureSession.Preset.high, .hd1280x720] {
            for format in [nil, PixelFormat.i420, .nv12VideoRange, .bgra] {
                let choice = try pick(device, preset, format)
                #expect(
                    choice.format.pixelFormat == .mjpeg && !choice.format.isEmulated,
                    "\(preset) \(String(describing: format))")
            }
        }
    }

    @Test("asking for .mjpeg picks the Motion-JPEG format (passthrough); a rate asked still counts")
    func mjpegRequests() throws {
        let device = try SimulatedRig().device
        let choice = try pick(device, .high, .mjpeg)
        #expect(choice.format.pixelFormat == .mjpeg && choice.format.dimensions.width == 1920)
        #expect(FormatNegotiator.conversionCost(from: choice.format, to: OutputRequest(pixelFormat: .mjpeg)) == 0)
        let raw = try #require(device.formats.first { $0.pixelFormat == .yuyv })
        #expect(
            FormatNegotiator.conversionCost(from: raw, to: OutputRequest(pixelFormat: .mjpeg))
                == FormatNegotiator.impossible)
        let slow = try pick(device, .hd1920x1080, .nv12VideoRange, rate: MediaTime(value: 1, timescale: 5))
        #expect(slow.format.pixelFormat == .yuyv, "at 5 fps the raw mode keeps the rate and costs less")
    }

    @Test("the session-test listing: raw presets still prefer smooth sizes; the session negotiates MJPEG 1080p30")
    func sessionListing() throws {
        let formats = [
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 1920, height: 1080, frameRateRanges: [.init(framesPerSecond: 5)]),
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 640, height: 480, frameRateRanges: [.init(framesPerSecond: 30)]),
            CaptureDevice.Format(
                pixelFormat: .mjpeg, width: 1920, height: 1080, frameRateRanges: [.init(framesPerSecond: 30)]),
        ]
        #expect(CaptureSession.Preset.high.bestFormat(in: formats)?.dimensions.width == 640)
        let device = VirtualCamera(configuration: .init(clock: ManualClock(), formats: formats)).device
        let choice = try pick(device, .high)
        #expect(choice.format.pixelFormat == .mjpeg && choice.format.dimensions.width == 1920)
        #expect(device.supportsSessionPreset(.hd1920x1080))
    }

    @Test(".high on the simulated C920: a session streams MJPEG 1920x1080 at 30 fps, decoded to full-range NV12")
    func simulatedC920Session() throws {
        let rig = try SimulatedRig()
        let checker = PatternChecker(width: 1920, height: 1080)
        let delegate = RecordingDelegate(inspect: { checker.check($0, number: $0.sequenceNumber) })
        let (session, output) = try makeSession(device: try rig.device, delegate: delegate, preset: .high)
        session.startRunning()
        defer { session.stopRunning() }
        let device = try rig.device
        #expect(device.activeFormat.pixelFormat == .mjpeg)
        #expect(device.activeFormat.dimensions == .init(width: 1920, height: 1080))
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(output.deliveredFormat?.pixelFormat == .nv12FullRange)
        #expect(output.deliveredFormat?.size == .init(width: 1920, height: 1080))
        for _ in 0..<3 {
            rig.clock.advance(by: thirtyFPS)
            #expect(delegate.waitForMoreFrames())
        }
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2])
        #expect(delegate.frames.map(\.patternNumber) == [0, 1, 2])
        #expect(checker.differences.allSatisfy { (0...3).contains($0) }, "\(checker.differences)")
    }
}
