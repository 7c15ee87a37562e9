import Foundation
import ViewfinderCore

// The rest of `AVCaptureMovieFileOutput`: the settings keys it takes, and what no Linux camera
// has (virtual-device switching while recording, spatial video) or the writer does not record
// (a metadata track of orientation changes), answering as AVFoundation does without them.
extension CaptureMovieFileOutput {
    /// The keys `setOutputSettings(_:for:)` takes for `connection`: ``VideoCodecKey`` and
    /// ``VideoCompressionPropertiesKey`` for video; none for audio (audio is AAC).
    public func supportedOutputSettingsKeys(for connection: CaptureConnection) -> [String] {
        connection.mediaType == .video ? [VideoCodecKey, VideoCompressionPropertiesKey] : []
    }

    /// Whether orientation and mirroring changes are recorded as a metadata track: `false` —
    /// the file carries the orientation at its start (its display matrix) only.
    public func recordsVideoOrientationAndMirroringChangesAsMetadataTrack(for connection: CaptureConnection) -> Bool {
        false
    }

    /// Records orientation changes as a metadata track: turning it on traps (the writer has no
    /// such track; the orientation at the start is written); turning it off is accepted.
    public func setRecordsVideoOrientationAndMirroringChanges(
        _ doRecordChanges: Bool, asMetadataTrackFor connection: CaptureConnection
    ) {
        if doRecordChanges {
            preconditionFailure(
                "recording orientation changes as a metadata track is not supported: set the connection's videoRotationAngle before startRecording"
            )
        }
    }

    /// Whether a virtual device's camera switching is restricted while recording: `false` (no
    /// virtual devices); setting `true` traps.
    public var isPrimaryConstituentDeviceSwitchingBehaviorForRecordingEnabled: Bool {
        get { false }
        set {
            if newValue {
                preconditionFailure("no Linux camera is a virtual device: check CaptureDevice.isVirtualDevice first")
            }
        }
    }
    /// Sets the switching behaviour while recording: traps (no virtual devices).
    public func setPrimaryConstituentDeviceSwitchingBehaviorForRecording(
        _ switchingBehavior: CaptureDevice.PrimaryConstituentDeviceSwitchingBehavior,
        restrictedSwitchingBehaviorConditions: CaptureDevice
            .PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions
    ) {
        preconditionFailure("no Linux camera is a virtual device: check CaptureDevice.isVirtualDevice first")
    }
    /// The switching behaviour while recording: ``CaptureDevice/PrimaryConstituentDeviceSwitchingBehavior/unsupported``.
    public var primaryConstituentDeviceSwitchingBehaviorForRecording:
        CaptureDevice.PrimaryConstituentDeviceSwitchingBehavior
    {
        .unsupported
    }
    /// The switching conditions while recording: none.
    public var primaryConstituentDeviceRestrictedSwitchingBehaviorConditionsForRecording:
        CaptureDevice.PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions
    { [] }

    /// Whether spatial (stereo) video can be recorded: `false`.
    public var isSpatialVideoCaptureSupported: Bool { false }
    /// Whether spatial video is recorded: `false`; setting `true` traps (check ``isSpatialVideoCaptureSupported``).
    public var isSpatialVideoCaptureEnabled: Bool {
        get { false }
        set {
            if newValue {
                preconditionFailure(
                    "spatial video is not supported by Linux cameras: check isSpatialVideoCaptureSupported")
            }
        }
    }
}
