/// Raw plane pointers and strides of an image, or of a band of its rows, in the form libyuv
/// takes them. Views are cheap values made per call; they own nothing.
///
/// Thread safety: a view is plain pointers. Bands of one frame are disjoint row ranges, so views
/// of different bands may be written from different threads at once.
package struct ImageView: @unchecked Sendable {  // unchecked: raw pointers into memory owned elsewhere.
    package var width: Int
    package var height: Int
    /// Plane base pointers; planes a format lacks repeat plane 0 and are never touched.
    package var planes: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>)
    package var strides: (Int, Int, Int)
    /// 1 when planes 1 and 2 have half as many rows as plane 0 (4:2:0), else 0.
    package var chromaRowShift: Int

    package init(_ buffer: PixelBuffer) {
        width = buffer.width
        height = buffer.height
        let count = buffer.planeCount
        func plane(_ index: Int) -> UnsafeMutablePointer<UInt8> {
            buffer.baseAddress(ofPlane: min(index, count - 1)).assumingMemoryBound(to: UInt8.self)
        }
        func stride(_ index: Int) -> Int { buffer.bytesPerRow(ofPlane: min(index, count - 1)) }
        planes = (plane(0), plane(1), plane(2))
        strides = (stride(0), stride(1), stride(2))
        chromaRowShift = count > 1 ? 1 : 0
    }

    package init(
        width: Int, height: Int, planes: [UnsafeMutablePointer<UInt8>], strides: [Int], chromaRowShift: Int
    ) {
        self.width = width
        self.height = height
        let last = planes.count - 1
        self.planes = (planes[0], planes[min(1, last)], planes[min(2, last)])
        self.strides = (strides[0], strides[min(1, last)], strides[min(2, last)])
        self.chromaRowShift = chromaRowShift
    }

    /// The view of rows `rows` (for 4:2:0 views `rows.lowerBound` must be even).
    package func rows(_ rows: Range<Int>) -> ImageView {
        var band = self
        band.height = rows.count
        let chromaRow = rows.lowerBound >> chromaRowShift
        band.planes = (
            planes.0 + rows.lowerBound * strides.0, planes.1 + chromaRow * strides.1, planes.2 + chromaRow * strides.2
        )
        return band
    }

    // libyuv argument helpers: constant pointer, mutable pointer, stride, width, height.
    @inline(__always) package var c0: UnsafePointer<UInt8> { UnsafePointer(planes.0) }
    @inline(__always) package var c1: UnsafePointer<UInt8> { UnsafePointer(planes.1) }
    @inline(__always) package var c2: UnsafePointer<UInt8> { UnsafePointer(planes.2) }
    @inline(__always) package var m0: UnsafeMutablePointer<UInt8> { planes.0 }
    @inline(__always) package var m1: UnsafeMutablePointer<UInt8> { planes.1 }
    @inline(__always) package var m2: UnsafeMutablePointer<UInt8> { planes.2 }
    @inline(__always) package var s0: Int32 { Int32(strides.0) }
    @inline(__always) package var s1: Int32 { Int32(strides.1) }
    @inline(__always) package var s2: Int32 { Int32(strides.2) }
    @inline(__always) package var w: Int32 { Int32(width) }
    @inline(__always) package var h: Int32 { Int32(height) }
    /// Half the width and height, rounded up (chroma plane sizes).
    @inline(__always) package var halfW: Int32 { Int32((width + 1) / 2) }
    @inline(__always) package var halfH: Int32 { Int32((height + 1) / 2) }
}

/// Memory for intermediate images, allocated once per converter (one per band) and reused for
/// every frame.
///
/// Thread safety: each band uses its own scratch; never shared between concurrent calls.
package final class ConversionScratch: @unchecked Sendable {  // unchecked: raw memory used by one band at a time.
    private let memory: UnsafeMutableRawPointer?
    /// Up to four regions carved from `memory`.
    package let regions: [UnsafeMutablePointer<UInt8>]

    /// Scratch holding regions of the given byte counts, each 64-byte aligned.
    package init(regionSizes: [Int]) {
        let rounded = regionSizes.map { ($0 + 63) & ~63 }
        let total = rounded.reduce(0, +)
        guard total > 0 else {
            memory = nil
            regions = []
            return
        }
        let base = UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 64)
        memory = base
        var offset = 0
        var regions: [UnsafeMutablePointer<UInt8>] = []
        for size in rounded {
            regions.append((base + offset).assumingMemoryBound(to: UInt8.self))
            offset += size
        }
        self.regions = regions
    }

    deinit { memory?.deallocate() }
}
