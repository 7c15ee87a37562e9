import Synchronization

/// Splits a processor's per-frame work into two bands of source rows, the second done on a
/// thread of its own, for frames of ``minimumPixels`` or more (ffmpeg's filters slice over cores
/// the same way). Smaller frames run on the calling thread alone: waking a thread costs more than
/// it saves there.
///
/// The work is fixed when the bands are made (no closure per frame); a per-run `variant` tells it
/// which case to run (a pixel format, say).
///
/// Thread safety: ``run(_:_:variant:)`` may be called from any thread; runs are serialised.
package final class RowBands: Sendable {
    /// Work on source rows `rows` of `source` into `destination`; returns libyuv's status.
    package typealias Work =
        @Sendable (_ rows: Range<Int>, _ source: ImageView, _ destination: ImageView, _ variant: Int)
        -> Int32

    /// Frames with fewer pixels run in one band.
    package static let minimumPixels = 1_000_000

    private let work: Work
    private let workers = Mutex<BandWorkers?>(nil)
    private let variant = Atomic<Int>(0)

    package init(_ work: @escaping Work) {
        self.work = work
    }

    deinit {
        workers.withLock { $0?.stop() }
    }

    /// Runs the work over every row of `source`, in two bands (split on an even row) when the
    /// frame is large.
    package func run(_ source: PixelBuffer, _ destination: PixelBuffer, variant: Int) -> Int32 {
        run(ImageView(source), ImageView(destination), pixels: source.width * source.height, variant: variant)
    }

    /// Runs the work over every row of `s` (a frame of `pixels` pixels), in two bands when large.
    package func run(_ s: ImageView, _ d: ImageView, pixels: Int, variant: Int) -> Int32 {
        guard pixels >= Self.minimumPixels else { return work(0..<s.height, s, d, variant) }
        return workers.withLock { workers in
            if workers == nil {
                let made = BandWorkers(bands: 2)
                made.work = { [work, unowned self] band, s, d in
                    let half = (s.height / 2) & ~1
                    return work(band == 0 ? 0..<half : half..<s.height, s, d, self.variant.load(ordering: .relaxed))
                }
                workers = made
            }
            self.variant.store(variant, ordering: .relaxed)
            return workers!.run(s, d)
        }
    }
}
