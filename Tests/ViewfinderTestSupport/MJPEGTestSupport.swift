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
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Memory for one Motion-JPEG frame, freed when its buffer goes.
package final class JPEGFrameMemory: PixelMemoryOwner, @unchecked Sendable {  // unchecked: freed once, in reclaim.
    package let memory: UnsafeMutableRawPointer

    private init(count: Int) { memory = .allocate(byteCount: max(1, count), alignment: 64) }

    package func reclaim(slot: Int) { memory.deallocate() }

    /// A ``PixelFormat/mjpeg`` buffer holding `bytes` (its ``PixelBuffer/dataSize``).
    package static func buffer(_ bytes: [UInt8], width: Int, height: Int) -> PixelBuffer {
        let owner = JPEGFrameMemory(count: bytes.count)
        bytes.withUnsafeBytes {
            if let base = $0.baseAddress { owner.memory.copyMemory(from: base, byteCount: $0.count) }
        }
        return PixelBuffer(
            memory: owner.memory, layout: PlaneLayout(pixelFormat: .mjpeg, width: width, height: height),
            dataSize: bytes.count, owner: owner, slot: 0)
    }
}

/// A video data output fed Motion-JPEG frames by hand (as a camera's capture thread would).
package struct MJPEGFeed {
    package let output: CaptureVideoDataOutput
    package let connection: CaptureConnection
    package let delegate: RecordingDelegate
    package let width: Int
    package let height: Int
    /// Keeps the session (and so the connection) alive.
    package let rig: Rig

    /// An output negotiated for an MJPEG camera format of `width` × `height` delivering
    /// `settings`, with `lanes` decoders.
    package init(
        width: Int, height: Int, settings: VideoSettings, bufferBudget: Int = 6, discardsLate: Bool = false,
        delegate: RecordingDelegate = RecordingDelegate()
    ) throws {
        let clock = ManualClock()
        rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), bufferBudget: bufferBudget,
            discardsLate: discardsLate, delegate: RecordingDelegate())
        rig.start()
        connection = try #require(rig.output.connection(with: .video))
        rig.session.stopRunning()
        output = rig.output
        self.delegate = delegate
        self.width = width
        self.height = height
        try output.setVideoSettings(settings)
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        output.sessionWillStartRunning()
        try output.prepareToStream(
            format: CaptureDevice.Format(
                pixelFormat: .mjpeg, width: width, height: height, frameRateRanges: [.init(framesPerSecond: 30)]),
            frameDuration: .fps(30))
    }

    /// Feeds frame `sequence` made of `bytes`.
    package func feed(_ bytes: [UInt8], sequence: UInt64) {
        output.receive(
            CapturedFrame(
                buffer: JPEGFrameMemory.buffer(bytes, width: width, height: height),
                presentationTime: MediaTime.fps(30) * Int64(sequence), duration: .fps(30), sequenceNumber: sequence,
                hostArrivalTime: HostClock().now()),
            from: connection)
    }
}

/// Compares delivered frames with the test pattern they show.
package final class PatternChecker: Sendable {
    private let worst = Mutex<[Int]>([])
    package let width: Int
    package let height: Int
    private let masks: Mutex<[UInt64: [Bool]]> = Mutex([:])

    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Records the largest difference of `sample` from pattern `number` over its flat areas
    /// (-1 when nothing could be compared).
    package func check(_ sample: SampleBuffer, number: UInt64) {
        guard let image = sample.imageBuffer,
            let reference = try? JPEGTestSupport.pattern(number, image.pixelFormat, width, height)
        else {
            worst.withLock { $0.append(-1) }
            return
        }
        let mask =
            masks.withLock { $0[number] }
            ?? (try? JPEGTestSupport.flatMask(sequence: number, width: width, height: height)) ?? []
        masks.withLock { $0[number] = mask }
        let (difference, compared) = JPEGTestSupport.maximumDifference(image, reference, mask: mask)
        worst.withLock { $0.append(compared > 0 ? difference : -1) }
    }

    /// The largest difference of each checked frame.
    package var differences: [Int] { worst.withLock { $0 } }
}
