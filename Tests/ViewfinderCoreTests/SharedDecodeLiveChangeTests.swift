import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport

/// The device's one Motion-JPEG decode follows its consumers while the session runs: an output
/// that needs a larger image widens it, and its leaving narrows it back.
@Suite("Shared Motion-JPEG decode: outputs joining and leaving a running session")
struct SharedDecodeLiveChangeTests {
    static let half = CaptureDevice.Dimensions(width: 960, height: 540)
    static let whole = CaptureDevice.Dimensions(width: 1920, height: 1080)

    /// Pushes frames `range` (1080p JPEGs of the test pattern) and waits until every one of
    /// `delegates` has `expected` frames in all.
    static func push(
        _ range: Range<Int>, to camera: JPEGFrameCamera, waitingFor delegates: [(RecordingDelegate, Int)]
    ) throws {
        for sequence in range {
            #expect(
                camera.push(
                    try JPEGTestSupport.jpeg(UInt64(sequence), width: 1920, height: 1080), sequence: UInt64(sequence)),
                "the camera streams (frame \(sequence))")
        }
        for (delegate, expected) in delegates {
            #expect(delegate.waitForFrames(expected, timeout: 30), "\(delegate.frames.count) of \(expected) frames")
        }
    }

    @Test(
        "a whole-size output joining a 960x540 one widens the shared decode to 1/1 (one decode a frame, each output at its size); its leaving narrows it back to 1/2"
    )
    func wholeSizeOutputJoinsAndLeaves() throws {
        let camera = JPEGFrameCamera(width: 1920, height: 1080)
        let small = CaptureVideoDataOutput()
        small.typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange, width: 960, height: 540)
        small.alwaysDiscardsLateVideoFrames = false
        let smallFrames = RecordingDelegate()
        small.setSampleBufferDelegate(smallFrames, queue: smallFrames.queue)
        let (session, device) = try SharedDecodeTests.run(camera, outputs: [small])
        #expect(session.isRunning)
        defer { session.stopRunning() }
        let before = try #require(device.sharedDecodePlan)
        #expect(before.scaleDenominator == 2 && before.decoded.size == Self.half, "\(before)")

        // One output: 1/2-scale decodes.
        try Self.push(0..<3, to: camera, waitingFor: [(smallFrames, 3)])
        #expect(small.waitUntilDelivered(timeout: 20))
        let first = try #require(device.sharedDecodeStatistics)
        #expect(first.decodes == 3 && first.scaledDecodes == 3, "\(first)")

        // A whole-size output joins: the decode widens to 1/1, shared by both.
        let large = CaptureVideoDataOutput()
        large.typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange)
        large.alwaysDiscardsLateVideoFrames = false
        let largeFrames = RecordingDelegate()
        large.setSampleBufferDelegate(largeFrames, queue: largeFrames.queue)
        try session.tryAddOutput(large)
        #expect(session.isRunning)
        let widened = try #require(device.sharedDecodePlan)
        #expect(widened.scaleDenominator == 1 && widened.decoded.size == Self.whole, "\(widened)")
        let joined = try #require(device.sharedDecodeStatistics)
        try Self.push(3..<7, to: camera, waitingFor: [(smallFrames, 7), (largeFrames, 4)])
        #expect(small.waitUntilDelivered(timeout: 20) && large.waitUntilDelivered(timeout: 20))
        let both = try #require(device.sharedDecodeStatistics)
        #expect(both.decodes - joined.decodes == 4, "one decode a frame for two outputs: \(joined) → \(both)")
        #expect(both.scaledDecodes == joined.scaledDecodes, "whole decodes only: \(joined) → \(both)")
        #expect(both.shared - joined.shared == 4, "the second output took the first one's image: \(both)")
        #expect(smallFrames.frames.dropFirst(3).allSatisfy { $0.width == 960 && $0.height == 540 })
        #expect(largeFrames.frames.allSatisfy { $0.width == 1920 && $0.height == 1080 })
        #expect(smallFrames.frames.map(\.patternNumber) == (0..<7).map { UInt64($0) })
        #expect(largeFrames.frames.map(\.patternNumber) == (3..<7).map { UInt64($0) })

        // It leaves: back to 1/2.
        session.removeOutput(large)
        #expect(session.isRunning)
        let narrowed = try #require(device.sharedDecodePlan)
        #expect(narrowed.scaleDenominator == 2 && narrowed.decoded.size == Self.half, "\(narrowed)")
        let left = try #require(device.sharedDecodeStatistics)
        try Self.push(7..<10, to: camera, waitingFor: [(smallFrames, 10)])
        #expect(small.waitUntilDelivered(timeout: 20))
        let after = try #require(device.sharedDecodeStatistics)
        #expect(
            after.decodes - left.decodes == 3 && after.scaledDecodes - left.scaledDecodes == 3, "\(left) → \(after)")
        #expect(
            smallFrames.frames.allSatisfy { $0.width == 960 && $0.height == 540 && $0.pixelFormat == .nv12FullRange })
        #expect(smallFrames.frames.map(\.patternNumber) == (0..<10).map { UInt64($0) })
        #expect(largeFrames.frames.count == 4)
        #expect(smallFrames.drops.isEmpty && largeFrames.drops.isEmpty)
        for output in [small, large] {
            let counts = output.statistics
            #expect(counts.captured == counts.delivered + counts.dropped + counts.rateGated, "\(counts)")
        }
    }
    @Test(
        "a running output asking for the whole size instead of 960x540 re-plans the shared decode to 1/1 without a restart, and asking 960x540 again narrows it back"
    )
    func outputGrowsAndShrinks() throws {
        let camera = JPEGFrameCamera(width: 1920, height: 1080)
        let outputs = try (0..<2).map { _ in
            let output = CaptureVideoDataOutput()
            output.typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange, width: 960, height: 540)
            output.alwaysDiscardsLateVideoFrames = false
            return output
        }
        let delegates = outputs.map { output in
            let delegate = RecordingDelegate()
            output.setSampleBufferDelegate(delegate, queue: delegate.queue)
            return delegate
        }
        let (session, device) = try SharedDecodeTests.run(camera, outputs: outputs)
        #expect(session.isRunning)
        defer { session.stopRunning() }
        #expect(device.sharedDecodePlan?.scaleDenominator == 2)
        try Self.push(0..<2, to: camera, waitingFor: [(delegates[0], 2), (delegates[1], 2)])
        let start = try #require(device.sharedDecodeStatistics)
        #expect(start.decodes == 2 && start.scaledDecodes == 2, "two outputs, one 1/2 decode a frame: \(start)")

        // The second output asks for the whole frame: the device keeps its format, the decode widens.
        outputs[1].typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange)
        #expect(session.isRunning)
        let widened = try #require(device.sharedDecodePlan)
        #expect(widened.scaleDenominator == 1 && widened.decoded.size == Self.whole, "\(widened)")
        let grown = try #require(device.sharedDecodeStatistics)
        #expect(grown.decodes >= start.decodes, "the same device decoder: no restart (\(start) → \(grown))")
        try Self.push(2..<5, to: camera, waitingFor: [(delegates[0], 5), (delegates[1], 5)])
        let wide = try #require(device.sharedDecodeStatistics)
        #expect(wide.decodes - grown.decodes == 3 && wide.scaledDecodes == grown.scaledDecodes, "\(grown) → \(wide)")
        #expect(delegates[0].frames.allSatisfy { $0.width == 960 && $0.height == 540 })
        #expect(delegates[1].frames.dropFirst(2).allSatisfy { $0.width == 1920 && $0.height == 1080 })

        // And back to 960x540: 1/2 again.
        outputs[1].typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange, width: 960, height: 540)
        let narrowed = try #require(device.sharedDecodePlan)
        #expect(narrowed.scaleDenominator == 2 && narrowed.decoded.size == Self.half, "\(narrowed)")
        let shrunk = try #require(device.sharedDecodeStatistics)
        try Self.push(5..<8, to: camera, waitingFor: [(delegates[0], 8), (delegates[1], 8)])
        let end = try #require(device.sharedDecodeStatistics)
        #expect(
            end.decodes - shrunk.decodes == 3 && end.scaledDecodes - shrunk.scaledDecodes == 3, "\(shrunk) → \(end)")
        #expect(delegates[1].frames.dropFirst(5).allSatisfy { $0.width == 960 && $0.height == 540 })
        for (output, delegate) in zip(outputs, delegates) {
            #expect(output.waitUntilDelivered(timeout: 20))
            #expect(delegate.frames.map(\.sequenceNumber) == (0..<8).map { UInt64($0) })
            #expect(delegate.drops.isEmpty)
            let counts = output.statistics
            #expect(counts.captured == counts.delivered + counts.dropped + counts.rateGated, "\(counts)")
        }
    }
}
