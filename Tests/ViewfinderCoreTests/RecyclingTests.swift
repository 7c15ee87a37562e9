import Dispatch
import Foundation
import Synchronization
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

/// Per-frame objects are recycled, never allocated per frame in steady state — and never reused
/// while anyone else holds them.
@Suite("Recycling per-frame objects")
struct RecyclingTests {
    @Test("a pixel buffer whose last holder recycles it goes back to its pool, object and memory")
    func pixelBufferRecycles() throws {
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 64, height: 48, capacity: 2)
        var buffer = pool.makePixelBuffer()
        let first = try #require(buffer).baseAddress
        let identity = ObjectIdentifier(try #require(buffer))
        #expect(pool.buffersInUse == 1)
        #expect(PixelBuffer.recycle(&buffer))
        #expect(buffer == nil)
        #expect(pool.buffersInUse == 0)
        #expect(pool.spares.count == 1)
        // The next buffer is the same object over the same memory: nothing was allocated.
        let again = try #require(pool.makePixelBuffer())
        #expect(ObjectIdentifier(again) == identity)
        #expect(again.baseAddress == first)
        #expect(pool.spares.count == 0)
        #expect(again.width == 64 && again.height == 48 && again.pixelFormat == .bgra)
    }

    @Test("a pixel buffer someone else holds is not recycled; its memory goes back when they let go")
    func heldPixelBufferIsNotRecycled() throws {
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: 32, height: 32, capacity: 2)
        var buffer = pool.makePixelBuffer()
        var holder = buffer
        #expect(!PixelBuffer.recycle(&buffer))
        #expect(buffer == nil)
        #expect(pool.buffersInUse == 1, "the holder's buffer must stay out of the pool")
        #expect(pool.spares.count == 0)
        holder = nil
        #expect(holder == nil)
        #expect(pool.buffersInUse == 0)
    }

    @Test("a recycled sample buffer gives back its slot and pixels, and comes back with nothing of the old frame")
    func sampleBufferRecycles() throws {
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 16, height: 16, capacity: 2)
        let spares = SpareObjects<SampleBuffer>(limit: 4)
        let budget = FrameBudget(limit: 2)
        #expect(budget.tryAcquire())
        var buffer: SampleBuffer? = SampleBuffer.make(
            imageBuffer: try #require(pool.makePixelBuffer()), presentationTimeStamp: .fps(30), duration: .fps(30),
            sequenceNumber: 7, attachments: ["note": "first"], budget: budget, spares: spares)
        let identity = ObjectIdentifier(try #require(buffer))
        #expect(SampleBuffer.recycle(&buffer, into: spares))
        #expect(budget.count == 0)
        #expect(pool.buffersInUse == 0)
        #expect(pool.spares.count == 1)
        #expect(spares.count == 1)

        let report = SampleBuffer.make(
            droppedFrameReason: .frameWasLate, count: 3, mediaType: .video, presentationTimeStamp: .fps(15),
            duration: .fps(30), sequenceNumber: 9, spares: spares)
        #expect(ObjectIdentifier(report) == identity)
        #expect(report.imageBuffer == nil && !report.dataIsReady)
        #expect(report.attachment(forKey: "note") == nil, "an attachment of the old frame survived reuse")
        #expect(report.droppedFrameReason == .frameWasLate && report.droppedFrameCount == 3)
        #expect(report.sequenceNumber == 9 && report.presentationTimeStamp == .fps(15))
    }

    @Test(
        "buffers a delegate keeps stay the frames they were while later frames are recycled", arguments: [false, true])
    func keptBuffersStayIntact(converted: Bool) throws {
        let clock = ManualClock()
        let kept = Mutex<[(buffer: SampleBuffer, sequence: UInt64, time: MediaTime)]>([])
        let delegate = RecordingDelegate(inspect: { buffer in
            kept.withLock { kept in
                if buffer.sequenceNumber % 5 == 0, kept.count < 3 {
                    kept.append((buffer, buffer.sequenceNumber, buffer.presentationTimeStamp))
                }
            }
        })
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.yuyv)),
            settings: converted ? try VideoSettings(pixelFormat: .bgra) : VideoSettings(), delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 60)
        rig.session.stopRunning()

        let frames = delegate.frames
        #expect(frames.count == 61)
        #expect(frames.allSatisfy { $0.patternNumber == $0.sequenceNumber })
        let held = kept.withLock { $0 }
        #expect(held.map(\.sequence) == [0, 5, 10])
        for entry in held {
            // Neither the object nor its pixels were handed out again while kept.
            #expect(entry.buffer.sequenceNumber == entry.sequence)
            #expect(entry.buffer.presentationTimeStamp == entry.time)
            let image = try #require(entry.buffer.imageBuffer)
            #expect(image.pixelFormat == (converted ? .bgra : .yuyv))
            #expect(TestPattern.readSequenceNumber(from: image) == entry.sequence)
        }
        // The frames not kept were recycled: their objects wait for the next stream.
        #expect(rig.output.sampleBufferSpares.count > 0)
        if converted {
            let pools = try #require(rig.output.engine.context?.chain.pools)
            #expect(pools.contains { $0.spares.count > 0 })
        }
        let stats = rig.output.statistics
        #expect(stats.captured == 61 && stats.delivered == 61 && stats.dropped == 0)
    }
}
