/// The settings of an output that runs a processor chain of its own (the video data output, the
/// virtual camera output): the format and size asked for and the chain.
package struct ProcessingSettings: Sendable {
    /// The format and size asked for.
    package var video = VideoSettings()
    /// The user's processors, in the order frames pass through them.
    package var processors: [NamedProcessor] = []
    /// The processors implementing the connection's rotation and mirroring, as read for a
    /// negotiation (they run first).
    package var connectionProcessors: [NamedProcessor] = []

    /// Every processor a frame passes through: the connection's, then the user's.
    package var chain: [NamedProcessor] { connectionProcessors + processors }

    /// The processors implementing `connection`'s rotation and mirroring.
    package static func connectionProcessors(_ connection: CaptureConnection?) -> [NamedProcessor] {
        guard let connection else { return [] }
        var implicit: [NamedProcessor] = []
        // The connection only takes angles RotateProcessor supports.
        if connection.videoRotationAngle != 0, let rotate = try? RotateProcessor(angle: connection.videoRotationAngle) {
            implicit.append(NamedProcessor(name: "connection.videoRotationAngle", processor: rotate))
        }
        if connection.isVideoMirrored {
            implicit.append(NamedProcessor(name: "connection.isVideoMirrored", processor: MirrorProcessor()))
        }
        return implicit
    }
}

extension OutputBody where Settings == ProcessingSettings {
    package var initialSettings: Settings { Settings() }

    /// The settings with the connection's rotation and mirroring read now.
    package func resolve(_ settings: Settings, for output: CaptureOutput) -> Settings {
        var resolved = settings
        resolved.connectionProcessors = ProcessingSettings.connectionProcessors(output.connection(with: .video))
        return resolved
    }

    /// The session's request: the format and size asked for, and what the chain's first
    /// processor accepts.
    package func request(for settings: Settings) -> OutputRequest {
        OutputRequest(
            pixelFormat: settings.video.pixelFormat, size: settings.video.size,
            processorFormats: settings.chain.first?.processor.acceptedPixelFormats ?? [])
    }
}

/// What ``CaptureVideoProcessingOutput`` edits: a core whose settings are ``ProcessingSettings``
/// (seen through this protocol, so the base class holds its subclass's core without knowing
/// its body).
package protocol ProcessingCore: AnyObject, Sendable {
    var currentSettings: ProcessingSettings { get }
    var minFrameDuration: MediaTime { get }
    func applyProcessingChange(_ edit: (inout ProcessingSettings) throws(CaptureError) -> Void) throws(CaptureError)
    func setMinFrameDuration(_ duration: MediaTime) throws(CaptureError)
    func postingFailure(_ change: () throws(CaptureError) -> Void)
}

extension EngineOutputCore: ProcessingCore where Body.Settings == ProcessingSettings {
    package var minFrameDuration: MediaTime { engine.minFrameDuration }

    package func applyProcessingChange(_ edit: (inout ProcessingSettings) throws(CaptureError) -> Void)
        throws(CaptureError)
    {
        try applyChange { (settings, _) throws(CaptureError) in try edit(&settings) }
    }
}

extension EngineOutputCore {
    /// Sets the engine's shortest time between delivered frames (`.invalid`: no limit); throws
    /// ``CaptureError/Code/invalidArgument`` for zero, negative or non-numeric durations.
    package func setMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        if duration.isValid && (!duration.isNumeric || duration <= .zero) {
            throw CaptureError(
                .invalidArgument,
                "minFrameDuration must be a positive, finite time, got \(duration); use .invalid for no limit")
        }
        try applyChange { _, engine in engine.minFrameDuration = duration }
    }
}
