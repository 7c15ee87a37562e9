import Foundation
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

@Suite("V4L2 streaming")
struct V4L2StreamingTests {
    @Test("the backend streams test-pattern frames with driver sequence numbers and kernel timestamps")
    func backendStreams() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink()
        let format = try rig.format(.yuyv, 320, 240)
        let chosen = try backend.startStreaming(format: format, frameDuration: thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        #expect(chosen == thirtyFPS)
        #expect(rig.camera.isStreaming)
        #expect(rig.camera.queuedBufferCount == 4)
        for _ in 0..<5 {
            rig.clock.advance(by: thirtyFPS)
            #expect(sink.waitForFrames())
        }
        let frames = sink.recorded
        #expect(frames.map(\.sequenceNumber) == [0, 1, 2, 3, 4])
        #expect(frames.map(\.patternNumber) == [0, 1, 2, 3, 4], "the pixels are the camera's own frames")
        // Frame k is due (k + 1) intervals after STREAMON; timestamps travel as timevals (µs).
        let expected = (1...5).map { MediaTime(value: Int64($0) * 1_000_000 / 30 * 1000, timescale: 1_000_000_000) }
        #expect(frames.map(\.presentationTime) == expected)
        #expect(frames.allSatisfy { $0.dataSize == 320 * 240 * 2 })
    }

    @Test("frames lost while every buffer is held show up as a sequence gap; released buffers are re-queued")
    func sequenceGapsAndRequeue() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink(keepsBuffers: true)
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        // Six intervals at once with four buffers queued: four frames, two lost.
        rig.clock.advance(by: thirtyFPS * 6)
        #expect(sink.waitForFrames(4))
        #expect(rig.camera.waitUntil(timeout: 10) { $0.framesLost == 2 })
        #expect(backend.buffersOutstanding == 4)
        #expect(rig.camera.queuedBufferCount == 0)
        sink.releaseKept()
        #expect(
            rig.camera.waitUntil(timeout: 10) { $0.queuedBufferCount == 4 }, "releasing a frame queues its buffer again"
        )
        rig.clock.advance(by: thirtyFPS)
        #expect(sink.waitForFrames())
        #expect(sink.recorded.map(\.sequenceNumber) == [0, 1, 2, 3, 6])
        let addresses = Set(sink.recorded.map(\.address))
        #expect(addresses.count == 4, "frames come from the ring's four mmap'd buffers")
    }

    @Test("the driver adjusts the frame interval to one it has; the backend reports what it chose")
    func frameIntervalAdjusted() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink()
        let chosen = try backend.startStreaming(
            format: try rig.format(.yuyv, 640, 480), frameDuration: MediaTime(value: 1, timescale: 25), sink: sink)
        backend.stopStreaming()
        #expect(chosen == MediaTime(value: 1, timescale: 24))
        #expect(rig.camera.frameInterval == MediaTime(value: 1, timescale: 24))
    }

    @Test("padded rows (bytesperline wider than the image) are honoured")
    func paddedRows() throws {
        let rig = try SimulatedRig(bytesPerLineAlignment: 256)
        let backend = try rig.backend
        let sink = RecordingSink()
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 176, 144), frameDuration: thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        rig.clock.advance(by: thirtyFPS * 3)
        #expect(sink.waitForFrames(3))
        #expect(sink.recorded.map(\.patternNumber) == [0, 1, 2])
    }

    @Test(
        "damaged, empty and short buffers are skipped, re-queued and counted, never delivered",
        arguments: [
            [SimulatedUVCCamera.FrameFault.errorFlag], [.emptyPayload], [.shortPayload],
            [.errorFlag, .emptyPayload, .shortPayload],
        ])
    func corruptFrames(faults: [SimulatedUVCCamera.FrameFault]) throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink()
        rig.camera.injectFrameFaults(faults)
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        rig.clock.advance(by: thirtyFPS * Int64(faults.count + 1))
        #expect(sink.waitForFrames())
        #expect(sink.recorded.map(\.sequenceNumber) == [UInt64(faults.count)])
        #expect(try rig.device.corruptFramesSkipped == faults.count)
        #expect(
            rig.camera.waitUntil(timeout: 10) { $0.queuedBufferCount == 4 }, "skipped buffers go back to the driver")
    }

    @Test("stopping releases the descriptor and every mapping, even with frames still held")
    func stopReleasesEverything() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink(keepsBuffers: true)
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: sink)
        rig.clock.advance(by: thirtyFPS * 2)
        #expect(sink.waitForFrames(2))
        backend.stopStreaming()
        #expect(!rig.camera.isStreaming)
        #expect(rig.camera.openDescriptorCount == 0, "the device is free for the next open at once")
        #expect(rig.bus.mappedBufferCount == 2, "held frames stay mapped and valid")
        // A new stream can start while the old frames are still held.
        let second = RecordingSink()
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: second)
        backend.stopStreaming()
        sink.releaseKept()
        #expect(rig.bus.mappedBufferCount == 0)
        #expect(rig.bus.openDescriptorCount == 0)
    }
}

@Suite("V4L2 with a capture session")
struct V4L2SessionTests {
    @Test("a session delivers the camera's frames to the delegate, zero-copy in the native format")
    func sessionDeliversZeroCopy() throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(device: try rig.device, delegate: delegate, preset: .vga640x480)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        #expect(output.isZeroCopy)
        #expect(output.deliveredFormat?.pixelFormat == .yuyv)
        #expect(try rig.device.activeFormat == (try rig.format(.yuyv, 640, 480)))
        for _ in 0..<3 {
            rig.clock.advance(by: thirtyFPS)
            #expect(delegate.waitForMoreFrames())
        }
        let frames = delegate.frames
        #expect(frames.map(\.sequenceNumber) == [0, 1, 2])
        #expect(frames.map(\.patternNumber) == [0, 1, 2])
        #expect(frames.allSatisfy { $0.pixelFormat == .yuyv })
    }

    @Test(
        "a format the camera cannot produce is converted once per frame",
        arguments: [PixelFormat.bgra, .nv12VideoRange, .i420])
    func sessionConverts(target: PixelFormat) throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(
            device: try rig.device, delegate: delegate, settings: try VideoSettings(pixelFormat: target))
        session.startRunning()
        defer { session.stopRunning() }
        #expect(!output.isZeroCopy)
        #expect(output.deliveredFormat?.pixelFormat == target)
        #expect(try rig.device.activeFormat.pixelFormat == .yuyv, "YUYV is the camera's raw format")
        for _ in 0..<2 {
            rig.clock.advance(by: thirtyFPS)
            #expect(delegate.waitForMoreFrames())
        }
        #expect(delegate.frames.map(\.patternNumber) == [0, 1])
        #expect(delegate.frames.allSatisfy { $0.pixelFormat == target })
    }

    @Test("an MJPEG-only camera streams through its emulated raw format")
    func emulatedStreaming() throws {
        let listing = """
            \t[0]: 'MJPG' (Motion-JPEG, compressed)
            \t\tSize: Discrete 320x240
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            """
        let rig = try SimulatedRig(listing: listing, emulatesRawFormats: true)
        let delegate = RecordingDelegate()
        // Negotiation prefers Viewfinder's own decoder to libv4l2's emulation: choose the emulated
        // format by hand to stream through it.
        let device = try rig.device
        try device.lockForConfiguration()
        try device.setActiveFormat(try #require(device.formats.first { $0.isEmulated }))
        device.unlockForConfiguration()
        let (session, _) = try makeSession(
            device: device, delegate: delegate, settings: try VideoSettings(pixelFormat: .nv12VideoRange),
            preset: .inputPriority)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(try rig.device.activeFormat.isEmulated)
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())
        #expect(delegate.frames.map(\.patternNumber) == [0])
    }

    @Test("the frame rate set under the configuration lock reaches the driver")
    func frameRateSetting() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        try device.lockForConfiguration()
        try device.setActiveFormat(try rig.format(.yuyv, 640, 480))
        try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 15))
        device.unlockForConfiguration()
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .inputPriority)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(rig.camera.frameInterval == MediaTime(value: 1, timescale: 15))
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 15))
        rig.clock.advance(by: MediaTime(value: 1, timescale: 15))
        #expect(delegate.waitForMoreFrames())
        #expect(delegate.frames.first?.presentationTime == MediaTime(value: 66_666_000, timescale: 1_000_000_000))
    }

    @Test("a slow delegate starves the ring: frames are lost as discontinuities, and no buffer leaks")
    func slowDelegate() throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(device: try rig.device, delegate: delegate, discardsLate: false)
        session.startRunning()
        delegate.closeGate()
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.entered.wait(timeout: .now() + 10) == .success)
        // Ten more intervals while the delegate sits on frame 0: three buffers fill, seven frames are lost.
        rig.clock.advance(by: thirtyFPS * 10)
        #expect(rig.camera.waitUntil(timeout: 10) { $0.framesLost == 7 && $0.queuedBufferCount == 0 })
        delegate.openGate()
        #expect(delegate.waitForMoreFrames(4))
        #expect(rig.camera.waitUntil(timeout: 10) { $0.queuedBufferCount == 4 }, "every delivered buffer went back")
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2, 3, 11])
        #expect(output.statistics.droppedDiscontinuity == 7)
        session.stopRunning()
        delegate.queue.sync {}
        #expect(rig.bus.mappedBufferCount == 0)
        #expect(rig.bus.openDescriptorCount == 0)
        #expect(try rig.backend.buffersOutstanding == 0)
    }
}
