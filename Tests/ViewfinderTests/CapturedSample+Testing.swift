@testable import Viewfinder

extension CapturedSample {
    /// The pixels of a video sample (tests only feed video samples here).
    var buffer: PixelBuffer {
        guard let image else { fatalError("not a video sample") }
        return image
    }
}
