import Foundation
import Synchronization

/// The zero-shutter-lag ring of a ``CapturePhotoOutput``: copies of the most recent frames, from
/// which a request takes the frame nearest the moment it was made.
///
/// Memory: ``frameCapacity`` frames are kept; up to ``processingCapacity`` more may be held by
/// photos being made (a photo holds its frame until it is encoded), so the ring never holds more
/// than ``slotCount`` frame slots, each the size of one tightly packed frame of the stream
/// (a Motion-JPEG slot: the worst case of raw 4:2:2, the compressed bytes copied into it). A slot's
/// memory is allocated the first time it is used and kept while the stream's format lasts.
/// 1080p NV12: 6 × 3.1 MB = 18.7 MB; 1080p YUYV: 6 × 4.1 MB = 24.9 MB; 720p NV12: 8.3 MB.
///
/// A frame is copied in only when a slot is free: while every spare slot is held by photos being
/// made, new frames are skipped (counted in ``skippedFrames``) and the ring's newest frame ages.
///
/// Thread safety: every member may be used from any thread; state is under a mutex; pixels are
/// written only into a slot no one else holds.
package final class PhotoFrameRing: PixelMemoryOwner, @unchecked Sendable {
    // unchecked: slots' memory is written only while the slot is free (owned by `insert`).
    /// Frames kept for zero-shutter-lag requests: 4, about 133 ms at 30 fps.
    package static let frameCapacity = 4
    /// Further frames photos being made may hold at once.
    package static let processingCapacity = 2
    /// Every slot the ring may allocate.
    package static var slotCount: Int { frameCapacity + processingCapacity }

    /// One kept frame.
    package struct Entry: @unchecked Sendable {
        // unchecked: the buffer is the ring's copy, read-only once kept.
        package let buffer: PixelBuffer
        package let presentationTime: MediaTime
        package let duration: MediaTime
        package let sequenceNumber: UInt64
        package let hostArrivalTime: MediaTime
        /// The connection the frame came from (rotation, mirroring and device for the photo's EXIF).
        package let connection: CaptureConnection
    }

    private struct Slab {
        var generation: Int
        var layout: PlaneLayout
        var memory: [UnsafeMutableRawPointer?]
        var free: [Int]
    }

    private struct State {
        var slab: Slab?
        var entries: [Entry] = []
        var skipped = 0
        /// Memory of a replaced slab's slots still held by photos, by slot number: freed when
        /// they come back.
        var retired: [Int: UnsafeMutableRawPointer] = [:]
    }
    private let state = Mutex(State())
    private let spares = SpareObjects<PixelBuffer>(limit: PhotoFrameRing.slotCount)

    package init() {}

    deinit {
        state.withLock { state in
            for case let memory? in state.slab?.memory ?? [] { memory.deallocate() }
            for memory in state.retired.values { memory.deallocate() }
        }
    }

    /// The bytes the ring may hold for frames of `format` at `width` × `height`: ``slotCount``
    /// slots of one packed frame each.
    package static func byteBudget(pixelFormat: PixelFormat, width: Int, height: Int) -> Int {
        PlaneLayout(pixelFormat: pixelFormat, width: width, height: height).totalBytes * slotCount
    }

    /// The bytes allocated now.
    package var allocatedBytes: Int {
        state.withLock { state in
            guard let slab = state.slab else { return 0 }
            return slab.memory.count { $0 != nil } * slab.layout.totalBytes
        }
    }

    /// Frames kept now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// Frames not kept because every spare slot was held by photos being made (or the frame did
    /// not fit a slot).
    package var skippedFrames: Int { state.withLock { $0.skipped } }

    /// Whether a new frame would find no free slot (photos being made hold every spare one).
    package var isFull: Bool {
        state.withLock { state in
            guard let slab = state.slab else { return false }
            return slab.free.isEmpty && state.entries.count < Self.frameCapacity
        }
    }

    /// Slots photos being made hold now (kept frames aside).
    package var heldByPhotos: Int {
        state.withLock { state in
            guard let slab = state.slab else { return 0 }
            return Self.slotCount - slab.free.count - state.entries.count
        }
    }

    /// Copies `sample`'s frame into the ring, letting the oldest kept frame go when the ring is
    /// full. `false` when it could not be kept (no free slot, or a compressed frame larger than
    /// a slot).
    @discardableResult
    package func insert(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool {
        guard let image = sample.image else { return false }
        // Let the oldest frame go first, so its slot can take this one when no photo holds it.
        // (Released outside the lock: a buffer that goes gives its slot back under it.)
        let oldest = state.withLock { state -> Entry? in
            state.entries.count >= Self.frameCapacity ? state.entries.removeFirst() : nil
        }
        withExtendedLifetime(oldest) {}
        let isCompressed = image.pixelFormat == .mjpeg
        let bytes = isCompressed ? min(image.dataSize, image.bytes(ofPlane: 0).count) : nil
        var stale: [Entry] = []
        let taken = takeSlot(like: image, stale: &stale)
        withExtendedLifetime(stale) {}
        stale = []
        guard let (memory, slot, layout) = taken else {
            state.withLock { $0.skipped += 1 }
            return false
        }
        if let bytes {
            guard bytes <= layout.totalBytes else {
                reclaim(slot: slot)
                state.withLock { $0.skipped += 1 }
                return false
            }
            memory.copyMemory(from: image.baseAddress, byteCount: bytes)
        }
        let copy = PixelBuffer.make(
            memory: memory, layout: layout, dataSize: bytes, owner: self, slot: slot, spares: spares)
        if !isCompressed { PixelCopy.copy(image, into: copy) }
        let entry = Entry(
            buffer: copy, presentationTime: sample.presentationTime, duration: sample.duration,
            sequenceNumber: sample.sequenceNumber, hostArrivalTime: sample.hostArrivalTime, connection: connection)
        state.withLock { $0.entries.append(entry) }
        return true
    }

    /// The kept frame whose arrival is nearest `time` (the later one on a tie), and whether a
    /// frame yet to come could be nearer: the newest kept frame arrived more than half a frame
    /// interval (`frameDuration`) before `time`. `nil` when no frame is kept.
    package func nearest(to time: MediaTime, frameDuration: MediaTime) -> (entry: Entry, laterMayBeNearer: Bool)? {
        state.withLock { state in
            guard let newest = state.entries.last else { return nil }
            var best = newest
            var bestDistance = Self.distance(newest.hostArrivalTime, time)
            for entry in state.entries.reversed().dropFirst() {
                let distance = Self.distance(entry.hostArrivalTime, time)
                if distance < bestDistance {
                    best = entry
                    bestDistance = distance
                }
            }
            let half = frameDuration.isValid && frameDuration.seconds > 0 ? frameDuration.seconds / 2 : 0
            let laterMayBeNearer = (time - newest.hostArrivalTime).seconds > half
            return (best, laterMayBeNearer)
        }
    }

    /// Lets every kept frame go (the stream stopped or changed format); slots held by photos
    /// come back when those photos are made.
    package func removeAll() {
        let dropped = state.withLock { state -> [Entry] in
            defer { state.entries = [] }
            return state.entries
        }
        withExtendedLifetime(dropped) {}
    }

    private static func distance(_ a: MediaTime, _ b: MediaTime) -> Double { abs((a - b).seconds) }

    /// A free slot shaped like `image` (a new slab when the shape changed): its memory, its
    /// number and the layout, or `nil`.
    /// Frames of the old shape are moved to `stale`, for the caller to let go outside the lock.
    private func takeSlot(like image: PixelBuffer, stale: inout [Entry]) -> (UnsafeMutableRawPointer, Int, PlaneLayout)?
    {
        let layout = PlaneLayout(pixelFormat: image.pixelFormat, width: image.width, height: image.height)
        return state.withLock { state -> (UnsafeMutableRawPointer, Int, PlaneLayout)? in
            if state.slab?.layout != layout {
                // A new shape: free slots go now; slots held by photos are freed when they come back.
                let generation = (state.slab?.generation ?? -1) + 1
                if let old = state.slab {
                    for (index, memory) in old.memory.enumerated() {
                        guard let memory else { continue }
                        if old.free.contains(index) {
                            memory.deallocate()
                        } else {
                            state.retired[old.generation * Self.slotCount + index] = memory
                        }
                    }
                }
                state.slab = Slab(
                    generation: generation, layout: layout, memory: Array(repeating: nil, count: Self.slotCount),
                    free: Array((0..<Self.slotCount).reversed()))
                stale = state.entries
                state.entries = []
            }
            guard let index = state.slab!.free.popLast() else { return nil }
            let memory: UnsafeMutableRawPointer
            if let kept = state.slab!.memory[index] {
                memory = kept
            } else {
                memory = UnsafeMutableRawPointer.allocate(byteCount: layout.totalBytes, alignment: 64)
                state.slab!.memory[index] = memory
            }
            return (memory, state.slab!.generation * Self.slotCount + index, layout)
        }
    }

    package func reclaim(slot: Int) {
        state.withLock { state in
            if let memory = state.retired.removeValue(forKey: slot) {
                memory.deallocate()
                return
            }
            guard let generation = state.slab?.generation, slot / Self.slotCount == generation else { return }
            state.slab!.free.append(slot % Self.slotCount)
        }
    }
}
