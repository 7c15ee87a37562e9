/// One sample as a device backend hands it to the session, on the device's capture thread: a
/// video frame, or a chunk of audio (PCM) from a microphone.
///
/// Part of the backend API: a backend outside the package makes video samples with
/// ``init(buffer:presentationTime:duration:sequenceNumber:hostArrivalTime:)`` (pixels from a
/// ``PixelBufferPool``) and audio samples with
/// ``init(audio:format:presentationTime:sampleIndex:sequenceNumber:hostArrivalTime:framesLostBefore:)``
/// (PCM it read, copied once).
public struct CapturedSample: Sendable {
    /// What the sample carries.
    package enum Payload: Sendable {
        /// A video frame's pixels, in memory the backend owns (its ring); released back when the
        /// last reference goes.
        case image(PixelBuffer)
        /// A chunk of a microphone's PCM, in a pooled buffer the source owns.
        case audio(AudioChunk)
    }

    /// The media.
    package var payload: Payload
    /// Capture time on the device's clock.
    public var presentationTime: MediaTime
    /// How long the sample lasts: the frame interval for video.
    public var duration: MediaTime
    /// The device's sample counter (frames for video, chunks for audio). Gaps mean samples the
    /// device lost.
    public var sequenceNumber: UInt64
    /// When the sample reached user space, on the host's monotonic clock (for latency figures).
    public var hostArrivalTime: MediaTime
    /// Set on the first sample of a stream when the backend skipped samples before it (damaged
    /// frames): the sequence number of the first skipped one, so they count as a gap. `nil`
    /// otherwise.
    public var streamStartSequenceNumber: UInt64?
    /// A Motion-JPEG frame's decode, shared by every output it fans out to (set by the device's
    /// ``SharedDeviceStream``; `nil` for raw frames and samples made outside a session).
    package var decodedFrame: DecodedFrame?

    /// A video frame.
    public init(
        buffer: PixelBuffer, presentationTime: MediaTime, duration: MediaTime, sequenceNumber: UInt64,
        hostArrivalTime: MediaTime
    ) {
        self.payload = .image(buffer)
        self.presentationTime = presentationTime
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.hostArrivalTime = hostArrivalTime
    }

    /// A chunk of audio, timed as the chunk says; `sequenceNumber` counts chunks, lost ones
    /// included.
    package init(audio chunk: AudioChunk, sequenceNumber: UInt64) {
        self.payload = .audio(chunk)
        self.presentationTime = chunk.presentationTime
        self.duration = chunk.duration
        self.sequenceNumber = sequenceNumber
        self.hostArrivalTime = chunk.hostArrivalTime
    }

    /// A chunk of a microphone's PCM, for a backend outside the package: `samples` holds whole
    /// frames of `format` (interleaved, or one channel after another for a non-interleaved
    /// format), copied once into a buffer the sample owns (the package's own microphones lend
    /// pooled buffers instead). `sampleIndex` is the stream position of the first frame — frames
    /// since the stream started, lost ones included — and `framesLostBefore` the frames lost right
    /// before it; `sequenceNumber` counts chunks, lost ones included, so a gap is reported as
    /// a `.discontinuity` drop. The sample lasts as long as its frames, at `format`'s rate.
    ///
    /// Throws ``CaptureError/Code/invalidArgument`` for a format that does not validate, an empty
    /// chunk, or bytes that are not a whole number of frames.
    public init(
        audio samples: UnsafeRawBufferPointer, format: AudioFormat, presentationTime: MediaTime,
        sampleIndex: UInt64, sequenceNumber: UInt64, hostArrivalTime: MediaTime, framesLostBefore: Int = 0
    ) throws(CaptureError) {
        try format.validate()
        let frameBytes = format.sampleFormat.bytesPerSample * format.channelCount
        guard !samples.isEmpty, samples.count % frameBytes == 0 else {
            throw CaptureError(
                .invalidArgument,
                "an audio sample needs whole frames of \(format) (\(frameBytes) bytes each), got \(samples.count) bytes"
            )
        }
        guard framesLostBefore >= 0 else {
            throw CaptureError(.invalidArgument, "framesLostBefore cannot be negative, got \(framesLostBefore)")
        }
        let chunk = AudioChunk(
            buffer: PCMBuffer(copying: samples), frameCount: samples.count / frameBytes, format: format,
            presentationTime: presentationTime, sampleIndex: sampleIndex, framesLostBefore: framesLostBefore,
            hostArrivalTime: hostArrivalTime)
        self.init(audio: chunk, sequenceNumber: sequenceNumber)
    }

    /// The media type of the payload.
    public var mediaType: MediaType {
        switch payload {
        case .image: return .video
        case .audio: return .audio
        }
    }

    /// The pixels of a video frame.
    public var image: PixelBuffer? {
        switch payload {
        case .image(let image): return image
        case .audio: return nil
        }
    }

    /// The PCM of an audio chunk.
    package var audio: AudioChunk? {
        switch payload {
        case .image: return nil
        case .audio(let chunk): return chunk
        }
    }

    /// Media samples the sample holds in the media's own unit: audio frames for a chunk, 0 for
    /// video (a frame is its own unit).
    package var mediaSampleCount: Int { audio?.frameCount ?? 0 }

    /// What a gap of `lost` sequence numbers right before this sample covered: where it began,
    /// the duration a drop report gives, and for audio the sample frames lost (from the chunk's
    /// ``AudioChunk/framesLostBefore``; 0 for video).
    package func gap(sequencesLost lost: UInt64) -> (
        presentationTime: MediaTime, duration: MediaTime, mediaSamples: Int
    ) {
        if let chunk = audio {
            let length = chunk.format.duration(ofFrames: chunk.framesLostBefore)
            guard length.isNumeric else { return (presentationTime, .invalid, chunk.framesLostBefore) }
            return (presentationTime - length, length, chunk.framesLostBefore)
        }
        return (presentationTime - duration * Int64(clamping: lost), duration, 0)
    }
}

/// A video frame: the name the video backends use.
package typealias CapturedFrame = CapturedSample

/// Receives what a streaming device produces. Called on the device's capture thread, which
/// must never block: implementations queue work and return. The session implements it; a
/// backend only calls it.
public protocol DeviceStreamSink: AnyObject, Sendable {
    /// A sample arrived.
    func deviceDidCapture(_ frame: CapturedSample)
    /// The device failed; streaming has stopped. `isDisconnect` marks an unplugged device.
    func deviceDidFail(_ error: CaptureError)
    /// The device produced a frame but skipped it for `cause` (streaming goes on). A sink that
    /// sees only skips for a bounded time posts one runtime error (the session's stall watch).
    func deviceDidSkipFrame(_ cause: SkippedFrameCause)
}

extension DeviceStreamSink {
    /// Sinks that do not watch for stalls ignore skipped frames.
    public func deviceDidSkipFrame(_ cause: SkippedFrameCause) {}
}

/// What a kind of device (a camera family, a virtual camera) implements behind ``CaptureDevice``.
/// The session and outputs talk only to ``CaptureDevice``; backends never see them.
///
/// A backend outside the package conforms to this, lists its devices through a ``DeviceProvider`` and registers that with
/// ``CaptureDevice/registerProvider(_:)``, as the built-in backends do.
///
/// Thread safety: implementations must be callable from any thread; `startStreaming` and
/// `stopStreaming` are serialised by the owning ``CaptureDevice``.
public protocol DeviceBackend: AnyObject, Sendable {
    /// Stable across runs where the system allows (built from a bus path, say).
    var uniqueID: String { get }
    /// A name for people: the card name.
    var localizedName: String { get }
    /// The model (a driver name, say).
    var modelID: String { get }
    /// Who made it, if known.
    var manufacturer: String { get }
    /// The kind of device, for discovery sessions.
    var deviceType: CaptureDevice.DeviceType { get }
    /// Which way the camera faces, where the backend can tell.
    var position: CaptureDevice.Position { get }
    /// Every format the device offers.
    var formats: [CaptureDevice.Format] { get }
    /// The media the device produces (``MediaType/video`` for cameras); one input port each.
    var mediaTypes: [MediaType] { get }
    /// Whether the device is still there.
    var isConnected: Bool { get }
    /// Whether the device takes focus and exposure points of interest (default `false`).
    var supportsPointsOfInterest: Bool { get }
    /// The link the device's streams share with other devices (a USB bus), where the backend
    /// models it (default `nil`): what the session's format fallback and the multi-camera
    /// session's costs use.
    var bandwidth: (any DeviceBandwidth)? { get }

    /// Starts capturing in `format` with frames `frameDuration` apart, delivering to `sink` on
    /// the backend's own thread until ``stopStreaming()``. Returns the frame duration the
    /// hardware actually chose.
    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime

    /// Stops capturing and joins the capture thread: once this returns, the sink gets nothing
    /// more. Buffers still held by users stay valid until released.
    func stopStreaming()
}

extension DeviceBackend {
    /// Cameras produce video.
    public var mediaTypes: [MediaType] { [.video] }

    /// Unknown, unless the backend knows better.
    public var position: CaptureDevice.Position { .unspecified }

    /// No points of interest, unless the backend takes them.
    public var supportsPointsOfInterest: Bool { false }
    /// Not on a modelled link, unless the backend knows better.
    public var bandwidth: (any DeviceBandwidth)? { nil }

    /// The checks every backend makes before streaming: the device is still connected, offers
    /// `format`, and `format` is one a device can stream in (``CaptureDevice/Format/validate()``).
    public func checkCanStream(_ format: CaptureDevice.Format) throws(CaptureError) {
        guard isConnected else {
            throw CaptureError(
                .deviceDisconnected, "'\(localizedName)' is disconnected: reconnect it before starting the session")
        }
        guard formats.contains(format) else {
            throw CaptureError(
                .unsupportedFormat, "'\(localizedName)' does not offer \(format): pick one of its `formats`")
        }
        do throws(CaptureError) {
            try format.validate()
        } catch {
            throw CaptureError(.invalidArgument, "'\(localizedName)' cannot stream: \(error.message)")
        }
    }
}

/// Finds devices of one backend kind. Registered with
/// ``CaptureDevice/registerProvider(_:)``; the built-in backends' providers are registered the
/// same way (`Backends/BuiltInProviders.swift`).
public protocol DeviceProvider: Sendable {
    /// The backends present now; the registry keeps one ``CaptureDevice`` per unique ID.
    func discoverBackends() -> [any DeviceBackend]
    /// Where this provider's devices sort: lower first (real cameras before virtual ones).
    var sortOrder: Int { get }
}
