import Dispatch
import Foundation
import Testing
import ViewfinderCore
import ViewfinderMetadata
import ViewfinderTestSupport
import ViewfinderTesting

/// Collects a synchronizer's collections on its own queue.
private final class CollectionCollector: CaptureDataOutputSynchronizerDelegate, @unchecked Sendable {
    // unchecked: written on `queue` only, read through `queue.sync`.
    let queue = DispatchQueue(label: "synchronizer-collector")
    private var collections: [CaptureSynchronizedDataCollection] = []

    func dataOutputSynchronizer(
        _ synchronizer: CaptureDataOutputSynchronizer,
        didOutput synchronizedDataCollection: CaptureSynchronizedDataCollection
    ) {
        collections.append(synchronizedDataCollection)
    }

    var collected: [CaptureSynchronizedDataCollection] { queue.sync { collections } }
}

@Suite("CaptureDataOutputSynchronizer with a metadata output")
struct MetadataSynchronizerTests {
    @Test("a video and a metadata output are handed over together: the frame's codes, or an empty array, at its time")
    func videoAndMetadata() throws {
        let rig = try MetadataRig(withVideoOutput: true)
        let synchronizer = CaptureDataOutputSynchronizer(dataOutputs: [rig.video, rig.output])
        let collector = CollectionCollector()
        synchronizer.setDelegate(collector, queue: collector.queue)
        try rig.start(types: [.qr])
        rig.video.sessionWillStartRunning()
        try rig.video.prepareToStream(format: rig.format, frameDuration: MediaTime(value: 1, timescale: 30))
        let videoConnection = try #require(rig.video.connection(with: .video))

        // Frames 1 and 3 carry a code each, 2 and 4 none.
        let texts: [UInt64: String] = [1: "synchronized one", 3: "synchronized three"]
        for sequence in UInt64(1)...4 {
            var frame = CodeFrame()
            if let text = texts[sequence] { frame.draw(try Symbol.qr(text), x: 150, y: 90, module: 6) }
            let buffer = try frame.buffer(from: rig.pool)
            let sample = CapturedSample(
                buffer: buffer, presentationTime: MediaTime(value: Int64(sequence), timescale: 30),
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: sequence,
                hostArrivalTime: HostClock().now())
            rig.video.receive(sample, from: videoConnection)
            rig.output.receive(sample, from: rig.connection)
            #expect(rig.video.waitUntilDelivered(timeout: 30))
            #expect(rig.output.waitUntilDelivered(timeout: 30))
        }

        let collections = collector.collected
        #expect(collections.count == 4)
        for (index, collection) in collections.enumerated() {
            let sequence = UInt64(index + 1)
            let time = MediaTime(value: Int64(sequence), timescale: 30)
            #expect(collection.count == 2)
            let video = try #require(collection[rig.video] as? CaptureSynchronizedSampleBufferData)
            #expect(video.timestamp == time && !video.sampleBufferWasDropped)
            let metadata = try #require(
                collection.synchronizedData(for: rig.output) as? CaptureSynchronizedMetadataObjectData)
            #expect(metadata.timestamp == time)
            let strings = metadata.metadataObjects.compactMap {
                ($0 as? MetadataMachineReadableCodeObject)?.stringValue
            }
            if let text = texts[sequence] {
                #expect(strings == [text], "frame \(sequence)")
                #expect(metadata.metadataObjects.allSatisfy { $0.time == time })
            } else {
                #expect(metadata.metadataObjects.isEmpty, "frame \(sequence): no code, an empty array")
            }
        }
        #expect(synchronizer.unpartneredCounts == [0, 0])
        // The metadata output's own delegate is replaced while it is synchronized, as in AVFoundation.
        #expect(rig.collector.collected.isEmpty)
    }

    @Test("a frame the metadata output did not read still hands over its video frame, with no metadata data")
    func droppedMetadataFrame() throws {
        let rig = try MetadataRig(withVideoOutput: true)
        let synchronizer = CaptureDataOutputSynchronizer(dataOutputs: [rig.video, rig.output])
        let collector = CollectionCollector()
        synchronizer.setDelegate(collector, queue: collector.queue)
        try rig.start(
            types: [.qr],
            streamFormat: CaptureDevice.Format(
                pixelFormat: .mjpeg, width: 640, height: 480, frameRateRanges: [.init(framesPerSecond: 30)]))
        rig.video.sessionWillStartRunning()
        try rig.video.prepareToStream(format: rig.format, frameDuration: MediaTime(value: 1, timescale: 30))
        let videoConnection = try #require(rig.video.connection(with: .video))

        // The metadata output reads a damaged JPEG frame's luma and fails: dropped, counted.
        var frame = CodeFrame()
        frame.draw(try Symbol.qr("not read"), x: 150, y: 90, module: 6)
        let jpeg = try JPEGEncoder(quality: 0.9).encode(try frame.buffer(from: rig.pool))
        let damaged = Array(jpeg.prefix(40)) + [UInt8](repeating: 0x55, count: 200)
        let time = MediaTime(value: 1, timescale: 30)
        rig.output.receive(
            CapturedSample(
                buffer: JPEGFrameMemory.buffer(damaged, width: 640, height: 480), presentationTime: time,
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: 1, hostArrivalTime: HostClock().now()),
            from: rig.connection)
        rig.video.receive(
            CapturedSample(
                buffer: try frame.buffer(from: rig.pool), presentationTime: time,
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: 1, hostArrivalTime: HostClock().now()),
            from: videoConnection)
        #expect(rig.video.waitUntilDelivered(timeout: 30))
        #expect(rig.output.waitUntilDelivered(timeout: 30))
        #expect(rig.output.statistics.droppedByProcessor == 1)

        let collection = try #require(collector.collected.first)
        #expect(collector.collected.count == 1)
        #expect(collection.count == 1)
        #expect(collection[rig.video]?.timestamp == time)
        #expect(collection[rig.output] == nil)
    }
}
