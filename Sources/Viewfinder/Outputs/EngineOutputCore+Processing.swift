/// The settings of an output that runs a processor chain of its own (the video data output, the
/// virtual camera output): the part the chain's editing and the frame-rate limit share.
protocol ProcessorChainSettings: Sendable {
    /// The format and size asked for.
    var video: VideoSettings { get }
    /// The user's processors, in the order frames pass through them.
    var processors: [NamedProcessor] { get set }
    /// The processors implementing the connection's rotation and mirroring, as read for a
    /// negotiation (they run first).
    var connectionProcessors: [NamedProcessor] { get set }
}

extension ProcessorChainSettings {
    /// Every processor a frame passes through: the connection's, then the user's.
    var chain: [NamedProcessor] { connectionProcessors + processors }
}

extension OutputBody where Settings: ProcessorChainSettings {
    /// The settings with the connection's rotation and mirroring read now.
    func resolve(_ settings: Settings, for output: CaptureOutput) -> Settings {
        var resolved = settings
        resolved.connectionProcessors = CaptureVideoDataOutput.Body.connectionProcessors(
            output.connection(with: .video))
        return resolved
    }

    /// The session's request: the format and size asked for, and what the chain's first
    /// processor accepts.
    func request(for settings: Settings) -> OutputRequest {
        OutputRequest(
            pixelFormat: settings.video.pixelFormat, size: settings.video.size,
            processorFormats: settings.chain.first?.processor.acceptedPixelFormats ?? [])
    }
}

extension EngineOutputCore where Body.Settings: ProcessorChainSettings {
    /// The processor chain as set now.
    var processors: [NamedProcessor] { currentSettings.processors }

    /// The processor added under `name`, if any.
    func processor(named name: String) -> (any FrameProcessor)? {
        processors.first { $0.name == name }?.processor
    }

    /// Adds `processor` (see ``CaptureVideoDataOutput/addProcessor(_:named:at:)``).
    func addProcessor(_ processor: any FrameProcessor, named name: String, at position: ProcessorPosition)
        throws(CaptureError)
    {
        try editChain { (chain) throws(CaptureError) in try chain.add(processor, named: name, at: position) }
    }

    /// Removes the processor named `name`; throws when there is none.
    func removeProcessor(named name: String) throws(CaptureError) {
        try editChain { (chain) throws(CaptureError) in try chain.remove(named: name) }
    }

    /// Puts `processor` in the place of the one named `name`.
    func replaceProcessor(named name: String, with processor: any FrameProcessor) throws(CaptureError) {
        try editChain { (chain) throws(CaptureError) in try chain.replace(named: name, with: processor) }
    }

    /// Removes every processor.
    func removeAllProcessors() {
        try? editChain { $0.removeAll() }
    }

    /// Edits the chain by the one rule: renegotiated on a running session, the old chain kept when
    /// the new one cannot run.
    private func editChain(_ edit: (inout [NamedProcessor]) throws(CaptureError) -> Void) throws(CaptureError) {
        try applyChange { (settings, _) throws(CaptureError) in try edit(&settings.processors) }
    }
}

extension EngineOutputCore {
    /// Sets the engine's shortest time between delivered frames (`.invalid`: no limit); throws
    /// ``CaptureError/Code/invalidArgument`` for zero, negative or non-numeric durations.
    func setMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        if duration.isValid && (!duration.isNumeric || duration <= .zero) {
            throw CaptureError(
                .invalidArgument,
                "minFrameDuration must be a positive, finite time, got \(duration); use .invalid for no limit")
        }
        try applyChange { _, engine in engine.minFrameDuration = duration }
    }
}
