/// An output that runs frames through a processor chain of its own before it hands them on: the
/// base of ``CaptureVideoDataOutput`` (which hands them to a delegate) and
/// ``CaptureVirtualCameraOutput`` (which publishes them to other programs). A Viewfinder
/// addition: AVFoundation's outputs have no processors. Not made directly.
///
/// Its video settings, frame-rate limit and processor chain are set here, alike for both outputs,
/// by the one rule for settings: a change applies between two frames; on a running session the
/// session renegotiates, restarting the camera only when its format or rate must change. A change
/// that cannot run keeps the old setting: a method throws the error, a property setter posts it
/// as ``CaptureSession/runtimeErrorNotification``.
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
open class CaptureVideoProcessingOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in the core.
    private let processing: any ProcessingCore

    /// An output whose settings `processing` holds; the subclass then adopts the same core.
    package init(processing: any ProcessingCore) {
        self.processing = processing
        super.init()
    }

    // MARK: Settings

    /// The format and size to hand on, typed. Empty settings (the default) keep the camera's own
    /// format and size (a video data output then delivers the camera's buffers zero-copy; a
    /// virtual camera decodes Motion-JPEG to NV12). On a running session frames after the change
    /// come in the new format. If the new settings cannot be delivered, the old ones stay and the
    /// error is posted as ``CaptureSession/runtimeErrorNotification``; ``setVideoSettings(_:)``
    /// throws it instead. ``videoSettings`` is the same in AVFoundation's dictionary form.
    public var typedVideoSettings: VideoSettings {
        get { processing.currentSettings.video }
        set { processing.postingFailure { () throws(CaptureError) in try setVideoSettings(newValue) } }
    }

    /// The format and size to hand on, in AVFoundation's dictionary form (`[String: Any]!`):
    /// ``kCVPixelBufferPixelFormatTypeKey`` (an `OSType` such as ``kCVPixelFormatType_32BGRA``),
    /// ``kCVPixelBufferWidthKey`` and ``kCVPixelBufferHeightKey``; an empty dictionary, or `nil`,
    /// keeps the camera's own format and size. Reading gives the keys set. A dictionary with an
    /// unknown key or a format the output cannot deliver traps naming the fix, as AVFoundation
    /// raises (``VideoSettings/init(_:)`` and ``setVideoSettings(_:)`` throw instead); a running
    /// session that cannot deliver them keeps the old settings and posts the error, as
    /// ``typedVideoSettings`` does.
    public var videoSettings: [String: Any]! {
        get {
            let settings = typedVideoSettings
            var dictionary: [String: Any] = [:]
            for key in [kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey] {
                if let value = settings[key] { dictionary[key] = value }
            }
            return dictionary
        }
        set {
            let settings: VideoSettings
            do throws(CaptureError) {
                settings = try VideoSettings(newValue ?? [:])
            } catch {
                preconditionFailure("videoSettings: \(error.message) (VideoSettings(_:) throws instead)")
            }
            typedVideoSettings = settings
        }
    }

    /// Sets ``typedVideoSettings`` (and so ``videoSettings``), throwing (and keeping the old settings) when a running session
    /// cannot deliver them.
    public func setVideoSettings(_ settings: VideoSettings) throws(CaptureError) {
        try processing.applyProcessingChange { $0.video = settings }
    }

    /// The shortest time between frames handed on; `.invalid` (the default) for no limit.
    /// Setting it behaves as ``setMinFrameDuration(_:)``; an error (a non-positive duration, a
    /// rate a running session cannot get) keeps the old value and is posted as
    /// ``CaptureSession/runtimeErrorNotification``, as ``videoSettings``' setter does.
    public var minFrameDuration: MediaTime {
        get { processing.minFrameDuration }
        set { processing.postingFailure { () throws(CaptureError) in try setMinFrameDuration(newValue) } }
    }

    /// Sets ``minFrameDuration``: frames handed on will be at least `duration` apart in
    /// presentation time, less an allowance for timestamp jitter of 1/32 of `duration` (at most
    /// 2 ms) — so a camera running exactly at the limit, whose timestamps wobble by a little, is
    /// not halved. `.invalid` removes the limit. Applies from the next frame; on a running session
    /// the device is asked again for the nearest rate it supports. Throws
    /// ``CaptureError/Code/invalidArgument`` for zero or negative durations.
    public func setMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        try processing.setMinFrameDuration(duration)
    }

    // MARK: Processors

    /// The processor chain, in the order frames pass through it (before the delegate, or before
    /// a virtual camera publishes them: its consumers see what the chain makes).
    public var processors: [NamedProcessor] { processing.currentSettings.processors }

    /// The processor added under `name`, if any.
    public func processor(named name: String) -> (any FrameProcessor)? {
        processors.first { $0.name == name }?.processor
    }

    /// Adds `processor` under `name` at `position`. Allowed while running: the chain is
    /// renegotiated and takes effect between frames. Throws ``CaptureError/Code/invalidArgument``
    /// for an empty or taken name or an unknown anchor, and the processor's own error when it
    /// refuses the format it would receive (the chain is then unchanged).
    public func addProcessor(
        _ processor: any FrameProcessor, named name: String, at position: ProcessorPosition = .last
    ) throws(CaptureError) {
        try processing.applyProcessingChange { (settings) throws(CaptureError) in
            try settings.processors.add(processor, named: name, at: position)
        }
    }

    /// Removes the processor named `name`. Throws ``CaptureError/Code/invalidArgument`` when there
    /// is none.
    public func removeProcessor(named name: String) throws(CaptureError) {
        try processing.applyProcessingChange { (settings) throws(CaptureError) in
            try settings.processors.remove(named: name)
        }
    }

    /// Puts `processor` in the place of the one named `name`, keeping the name; frames switch
    /// between two frames.
    public func replaceProcessor(named name: String, with processor: any FrameProcessor) throws(CaptureError) {
        try processing.applyProcessingChange { (settings) throws(CaptureError) in
            try settings.processors.replace(named: name, with: processor)
        }
    }

    /// Removes every processor.
    public func removeAllProcessors() {
        try? processing.applyProcessingChange { $0.processors.removeAll() }
    }
}
