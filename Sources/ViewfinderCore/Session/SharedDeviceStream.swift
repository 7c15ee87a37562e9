import Foundation
import Synchronization

/// One backend stream of a device, fanned out to every session of the process that runs on it
/// (macOS's behaviour: two sessions on one camera share it instead of the later one taking it).
///
/// The first session to start a device starts its backend with this object as the sink and is
/// its first subscriber. A later session whose outputs can all be served from the format and
/// rate already running (``canServe(preset:requests:)``) subscribes its own ``DeviceStream``
/// beside it: every sample reaches both, and each session's outputs convert it into what they
/// asked for in their own engines. The backend stops when the last subscriber leaves; the
/// device's claim moves to a remaining subscriber's session when its holder leaves first. A
/// session that cannot be served from the running format takes the device as before, and every
/// subscriber is interrupted.
///
/// Thread safety: subscribers change and samples fan out under one mutex, so a subscriber that
/// has left gets no further sample; fan-out only queues into the outputs' engines, never runs
/// user code.
package final class SharedDeviceStream: DeviceStreamSink {
    /// The device streamed.
    package let device: CaptureDevice
    /// The format and rate it runs at.
    package let choice: FormatNegotiator.Choice
    private let subscribers = Mutex<[DeviceStream]>([])
    /// The device's digital zoom (``CaptureDevice/videoZoomFactor`` on a camera without a zoom
    /// control), applied to each frame before it fans out.
    private let zoom = DigitalZoom()
    /// The device's one Motion-JPEG decode, shared by every output of every session (`nil` for a
    /// raw format): each frame fans out with a ``DecodedFrame`` that decodes it when an output
    /// first asks.
    package let frameDecoder: DeviceFrameDecoder?

    /// Serialises negotiating and starting or joining a device's stream across sessions.
    private static let starting = NSRecursiveLock()

    /// Runs `body` (a session negotiating and starting or joining a stream) with no other
    /// session doing the same, so a session that resumes beside another finds its stream running.
    package static func serialized<T>(_ body: () throws(CaptureError) -> T) throws(CaptureError) -> T {
        starting.lock()
        defer { starting.unlock() }
        return try body()
    }

    /// The running shared streams, by device.
    private static let running = Mutex<[ObjectIdentifier: SharedDeviceStream]>([:])

    /// A stream of `device` at `choice`, not started yet (``start(with:)`` starts it).
    package init(device: CaptureDevice, choice: FormatNegotiator.Choice) {
        self.device = device
        self.choice = choice
        if choice.format.pixelFormat == .mjpeg && DeviceFrameDecoder.sharingEnabled.load(ordering: .relaxed) {
            let decoder = DeviceFrameDecoder(camera: choice.format.dimensions)
            decoder.currentPlan = SharedDecodePlan.current
            frameDecoder = decoder
        } else {
            frameDecoder = nil
        }
    }

    // MARK: Registry

    /// The stream running on `device`, if one is.
    package static func stream(on device: CaptureDevice) -> SharedDeviceStream? {
        running.withLock { $0[ObjectIdentifier(device)] }
    }

    /// Starts the device's backend at ``choice`` with `first` (whose session holds the device's
    /// claim) as the first subscriber; returns the frame duration the backend runs at.
    package func start(with first: DeviceStream) throws(CaptureError) -> MediaTime {
        subscribers.withLock { $0 = [first] }
        Self.running.withLock { $0[ObjectIdentifier(device)] = self }
        do {
            return try device.backend.startStreaming(
                format: choice.format, frameDuration: choice.frameDuration, sink: self)
        } catch {
            Self.running.withLock { if $0[ObjectIdentifier(device)] === self { $0[ObjectIdentifier(device)] = nil } }
            subscribers.withLock { $0 = [] }
            throw error
        }
    }

    /// The choice a session's `requests` should run `device` at: the running stream's when another
    /// session runs it and can serve them all, else what ``FormatNegotiator`` picks.
    package static func negotiate(
        device: CaptureDevice, preset: CaptureSession.Preset, requests: [OutputRequest], for session: CaptureSession
    ) throws(CaptureError) -> FormatNegotiator.Choice {
        if let shared = stream(on: device), shared.hasOtherSessions(than: session),
            shared.canServe(preset: preset, requests: requests)
        {
            return shared.choice
        }
        return try FormatNegotiator.negotiate(device: device, preset: preset, requests: requests)
    }

    // MARK: Subscribers

    /// Whether a session other than `session` streams through this stream.
    package func hasOtherSessions(than session: CaptureSession) -> Bool {
        subscribers.withLock { $0.contains { $0.sessionID != ObjectIdentifier(session) } }
    }

    /// The sessions streaming through this stream now.
    package func sessions() -> [CaptureSession] {
        subscribers.withLock { $0.compactMap(\.owningSession) }
    }

    /// Whether a session with `preset` and `requests` can run on the running format and rate:
    /// the format is one the preset would pick from (or the user chose it), every output can be
    /// served from it, and it keeps the fastest rate an output asks for.
    package func canServe(preset: CaptureSession.Preset, requests: [OutputRequest]) -> Bool {
        // Microphones keep iOS's rule (the later session takes them): audio requests are not
        // priced by conversion here.
        guard device.hasMediaType(.video) else { return false }
        let format = choice.format
        if !device.userChoseFormat && preset != .inputPriority {
            guard preset.candidates(in: device.formats, decoding: true)?.contains(format) == true else { return false }
        }
        for request in requests {
            if FormatNegotiator.conversionCost(from: format, to: request).unservable > 0 { return false }
        }
        let limits = requests.map(\.minFrameDuration).filter(\.isNumeric)
        if let wanted = limits.min(), choice.frameDuration > wanted { return false }
        return true
    }

    /// Adds `stream` (a later session's, made with this shared stream) as a subscriber: from the
    /// next sample it gets every one. `false` when the stream has already stopped (its last
    /// subscriber left).
    package func join(_ stream: DeviceStream) -> Bool {
        subscribers.withLock { list -> Bool in
            guard !list.isEmpty else { return false }
            list.append(stream)
            return true
        }
    }

    /// Removes `stream`; returns whether it was the last (the caller then stops the backend and
    /// releases the claim). When it was not and its session held the device's claim, the claim
    /// moves to a remaining subscriber's session. Blocks while a sample is being fanned out, so
    /// `stream` gets none after this returns.
    package func leave(_ stream: DeviceStream) -> Bool {
        let last = subscribers.withLock { list -> Bool in
            list.removeAll { $0 === stream }
            if let heir = list.lazy.compactMap(\.owningSession).first {
                device.transferClaim(from: stream.sessionID, to: heir)
            }
            return list.isEmpty
        }
        if last {
            Self.running.withLock {
                if $0[ObjectIdentifier(device)] === self { $0[ObjectIdentifier(device)] = nil }
            }
        }
        return last
    }

    // MARK: DeviceStreamSink

    package func deviceDidCapture(_ frame: CapturedSample) {
        var frame = frame
        if case .image = frame.payload {
            // Digital zoom, once for every output of every session (a mutex read at factor 1).
            let factor = device.digitalZoomFactor(forFrameAt: frame.presentationTime)
            if factor != 1 {
                guard let zoomed = zoom.zoom(frame, by: factor) else { return }
                frame = zoomed
            }
        }
        if let frameDecoder, let image = frame.image, image.pixelFormat == .mjpeg {
            // Nothing is decoded here: the first output that needs pixels decodes, the others share.
            frame.decodedFrame = frameDecoder.frame(for: image)
        }
        subscribers.withLock { list in
            for stream in list { stream.deviceDidCapture(frame) }
        }
        // Every output dropped the frame (or none streams): its decode object is reused at once.
        DeviceFrameDecoder.recycle(&frame.decodedFrame)
    }

    package func deviceDidFail(_ error: CaptureError) {
        for stream in subscribers.withLock({ $0 }) { stream.deviceDidFail(error) }
    }

    package func deviceDidSkipFrame(_ cause: SkippedFrameCause) {
        for stream in subscribers.withLock({ $0 }) { stream.deviceDidSkipFrame(cause) }
    }
}
