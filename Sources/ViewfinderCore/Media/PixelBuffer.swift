/// Something that owns the memory behind pixel buffers and takes it back when a buffer's last
/// reference goes: a ``PixelBufferPool``, or a camera's buffer ring.
public protocol PixelMemoryOwner: AnyObject, Sendable {
    /// Takes back the memory of slot `slot`. Called once per buffer, from whichever thread
    /// dropped the last reference.
    func reclaim(slot: Int)
}

/// An image in memory, the counterpart of Core Video's `CVPixelBuffer`: a size, a pixel format and
/// one to three planes, each with a base address and a row stride.
///
/// The memory belongs to a pool or to the camera's buffer ring and goes back to it when the last
/// reference to the buffer goes, so holding buffers holds pool slots: keep them only as long as
/// you need them.
///
/// Thread safety: the object may be shared across threads. Its pixels are plain memory: the
/// pipeline writes them before handing the buffer on and never after, so readers need no locking;
/// a processor that writes in place owns the buffer while it runs.
public final class PixelBuffer: @unchecked Sendable {  // unchecked: raw pixel memory, see above.
    /// The largest width or height of a frame anywhere in Viewfinder: 16384 pixels. Settings,
    /// processors, pools and device listings that name a larger size are refused with
    /// ``CaptureError/Code/invalidArgument``.
    public static let maximumDimension = 16384

    /// Throws ``CaptureError/Code/invalidArgument`` unless both sides are 1…``maximumDimension``.
    package static func checkDimensions(width: Int, height: Int, what: String) throws(CaptureError) {
        guard (1...maximumDimension).contains(width), (1...maximumDimension).contains(height) else {
            throw CaptureError(
                .invalidArgument,
                "\(what) of \(width)x\(height) is outside 1…\(maximumDimension) pixels a side: choose a smaller size")
        }
    }

    /// Width in pixels.
    public var width: Int { layout.width }
    /// Height in pixels.
    public var height: Int { layout.height }
    /// The layout of the pixels.
    public var pixelFormat: PixelFormat { layout.pixelFormat }
    /// The bytes of valid data (for compressed formats the size of this frame; otherwise the
    /// whole image).
    public private(set) var dataSize: Int

    // These change only while the object is unshared: when its owner recycles it (see
    // ``recycle(_:)``), never while anyone else can see it.
    private var base: UnsafeMutableRawPointer
    private var layout: PlaneLayout
    private var owner: PixelMemoryOwner?
    private var slot: Int
    /// Where the object goes for reuse when its last holder recycles it (`nil`: it is let go).
    private var spares: SpareObjects<PixelBuffer>?

    /// Wraps memory owned by `owner`; `owner.reclaim(slot:)` runs when the buffer goes.
    package init(
        memory: UnsafeMutableRawPointer, layout: PlaneLayout, dataSize: Int? = nil,
        owner: PixelMemoryOwner?, slot: Int
    ) {
        self.base = memory
        self.layout = layout
        self.dataSize = dataSize ?? layout.totalBytes
        self.owner = owner
        self.slot = slot
    }

    /// A buffer over `memory` like ``init(memory:layout:dataSize:owner:slot:)``, made from a spare
    /// object of `spares` when one is kept (no allocation), and going back there when its last
    /// holder recycles it. Owners that lend buffers every frame (pools, camera rings) make them
    /// this way.
    package static func make(
        memory: UnsafeMutableRawPointer, layout: PlaneLayout, dataSize: Int? = nil, owner: PixelMemoryOwner,
        slot: Int, spares: SpareObjects<PixelBuffer>
    ) -> PixelBuffer {
        let buffer: PixelBuffer
        if let spare = spares.take() {
            // The spare's only reference is ours: rebinding it is invisible to anyone.
            spare.base = memory
            spare.layout = layout
            spare.dataSize = dataSize ?? layout.totalBytes
            spare.owner = owner
            spare.slot = slot
            buffer = spare
        } else {
            buffer = PixelBuffer(memory: memory, layout: layout, dataSize: dataSize, owner: owner, slot: slot)
        }
        buffer.spares = spares
        return buffer
    }

    /// Gives `buffer`'s memory back to its owner now and its object to the owner's spares, when
    /// the caller holds the last reference to it; `buffer` is `nil` afterwards either way (a
    /// buffer someone else still holds goes back when they let go, as always). Returns whether
    /// it was recycled.
    @discardableResult
    package static func recycle(_ buffer: inout PixelBuffer?) -> Bool {
        guard isKnownUniquelyReferenced(&buffer), let unique = buffer else {
            buffer = nil
            return false
        }
        buffer = nil
        let owner = unique.owner
        let spares = unique.spares
        unique.owner = nil
        unique.spares = nil
        owner?.reclaim(slot: unique.slot)
        guard let spares else { return owner != nil }
        spares.put(unique)
        return true
    }

    deinit {
        owner?.reclaim(slot: slot)
    }

    /// How many planes the buffer has (1 for BGRA and YUYV, 2 for NV12, 3 for I420).
    public var planeCount: Int { layout.planes.count }

    /// Whether the buffer's format has more than one plane.
    public var isPlanar: Bool { planeCount > 1 }

    /// The first byte of plane `plane`.
    public func baseAddress(ofPlane plane: Int) -> UnsafeMutableRawPointer {
        precondition(plane >= 0 && plane < planeCount, "plane \(plane) out of range 0..<\(planeCount)")
        return base + layout.planes[plane].offset
    }

    /// The first byte of the image (plane 0).
    public var baseAddress: UnsafeMutableRawPointer { base }

    /// Bytes from one row of plane `plane` to the next.
    public func bytesPerRow(ofPlane plane: Int) -> Int { layout.planes[plane].geometry.bytesPerRow }

    /// Samples per row of plane `plane`.
    public func width(ofPlane plane: Int) -> Int { layout.planes[plane].geometry.width }

    /// Rows of plane `plane`.
    public func height(ofPlane plane: Int) -> Int { layout.planes[plane].geometry.height }

    /// Bytes per row of plane 0.
    public var bytesPerRow: Int { bytesPerRow(ofPlane: 0) }

    /// Plane `plane`'s bytes, row stride included, for reading.
    public func bytes(ofPlane plane: Int) -> UnsafeRawBufferPointer {
        let geometry = layout.planes[plane].geometry
        return UnsafeRawBufferPointer(start: baseAddress(ofPlane: plane), count: geometry.bytesPerRow * geometry.height)
    }
}

/// Where each plane of a buffer sits in one block of memory. Computed once per pool or ring
/// and shared by all its buffers.
package struct PlaneLayout: Sendable, Hashable {
    package struct Plane: Sendable, Hashable {
        package var offset: Int
        package var geometry: PlaneGeometry
    }

    package let pixelFormat: PixelFormat
    package let width: Int
    package let height: Int
    package let planes: [Plane]
    package let totalBytes: Int

    /// A layout of rows `firstPlaneBytesPerRow` apart in plane 0 (tightly packed when `nil` or
    /// smaller than a row; chroma planes take their stride from it: half for I420's Cb and Cr,
    /// the same for NV12's interleaved CbCr), each plane starting on a `planeAlignment`-byte
    /// boundary. Pools use the defaults: packed rows, 64-byte aligned planes.
    package init(
        pixelFormat: PixelFormat, width: Int, height: Int, firstPlaneBytesPerRow: Int? = nil,
        planeAlignment: Int = 64
    ) {
        let packed = pixelFormat.planeGeometry(0, width: width, height: height).bytesPerRow
        var offset = 0
        var planes: [Plane] = []
        for index in 0..<pixelFormat.planeCount {
            var geometry = pixelFormat.planeGeometry(index, width: width, height: height)
            if let stride = firstPlaneBytesPerRow, stride > packed {
                geometry.bytesPerRow = pixelFormat == .i420 && index > 0 ? stride / 2 : stride
            }
            planes.append(Plane(offset: offset, geometry: geometry))
            let bytes = geometry.bytesPerRow * geometry.height
            offset += (bytes + planeAlignment - 1) / planeAlignment * planeAlignment
        }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.planes = planes
        self.totalBytes = offset
    }
}
