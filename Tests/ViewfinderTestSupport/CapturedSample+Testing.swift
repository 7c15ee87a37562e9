@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

extension CapturedSample {
    /// The pixels of a video sample (tests only feed video samples here).
    package var buffer: PixelBuffer {
        guard let image else { fatalError("not a video sample") }
        return image
    }
}
