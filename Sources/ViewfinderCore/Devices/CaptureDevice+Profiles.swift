import Foundation
import Synchronization

/// Per-device profile settings and whether the profile was applied since the device connected.
package struct ProfileState: Sendable {
    var automaticallyApplies = true
    var automaticName = CaptureDevice.defaultProfileName
    /// Where this device's profiles live; `nil`: the XDG config directory.
    var store: CameraProfileStore?
    /// Whether the automatic profile was applied since the device (re)connected.
    var appliedSinceConnect = false
}

/// Camera profiles: a device's control values, active format and frame rate saved under its
/// ``uniqueID`` and applied again later — by hand with ``applyProfile(named:)``, or by itself when
/// the device is opened (a session starts streaming it) and each time it comes back after an
/// unplug or a suspend, before the first frame is delivered (``automaticallyAppliesProfile``).
///
/// UVC cameras forget exposure, white balance and picture controls on every replug; a profile
/// puts them back. Profiles are files a person can read and edit: JSON with sorted keys in
/// `$XDG_CONFIG_HOME/viewfinder/profiles/<unique ID>/<name>.json` (`~/.config/…` by default).
///
/// A value the device refuses when a profile is applied (out of its range now, a control it no
/// longer has, a format it no longer offers) is skipped and reported as a ``ProfileProblem``;
/// the other values still apply.
extension CaptureDevice {
    /// The profile saved and applied when no name is given, and the one applied automatically
    /// unless ``automaticallyAppliedProfileName`` says otherwise: `"default"`.
    public static let defaultProfileName = "default"

    /// Posted to `NotificationCenter.default` after the device applied a profile by itself (it was
    /// opened, or came back after an unplug); the `object` is the ``CaptureDevice``, the
    /// `userInfo` holds the profile's name under ``CaptureDeviceProfileNameKey`` and the values
    /// it refused (`[CaptureDevice.ProfileProblem]`, empty when all applied) under
    /// ``CaptureDeviceProfileProblemsKey``. Posted synchronously before the device's first frame,
    /// on the thread that opens the device (a session's): observers read or log what they need and
    /// leave starting or stopping sessions to another queue.
    public static let didApplyProfileNotification = Notification.Name("ViewfinderCaptureDeviceDidApplyProfile")

    /// A saved value the device refused when a profile was applied: which setting, and why.
    ///
    /// Thread safety: a value type; freely sendable.
    public struct ProfileProblem: Sendable, Hashable, CustomStringConvertible {
        /// Which saved value was refused.
        public enum Setting: Sendable, Hashable, CustomStringConvertible {
            /// A generic control (``CaptureDevice/Control``) and the value saved for it.
            case control(Control.ID, value: Int)
            /// The saved active format (the device no longer offers it).
            case activeFormat
            /// The saved frame duration (the active format does not support it).
            case activeVideoMinFrameDuration
            /// The profile's file itself (it could not be read: applied automatically, nothing applied).
            case profileFile

            public var description: String {
                switch self {
                case .control(let id, let value): return "control \(id) = \(value)"
                case .activeFormat: return "active format"
                case .activeVideoMinFrameDuration: return "frame duration"
                case .profileFile: return "profile file"
                }
            }
        }

        /// The refused value.
        public var setting: Setting
        /// Why the device refused it (``CaptureError/Code/invalidArgument`` for a value out of
        /// range, ``CaptureError/Code/unsupportedControl`` for a control the device lacks,
        /// ``CaptureError/Code/unsupportedFormat`` for a format or rate it does not offer).
        public var error: CaptureError

        /// A problem with `setting`.
        public init(setting: Setting, error: CaptureError) {
            self.setting = setting
            self.error = error
        }

        public var description: String { "\(setting): \(error.message)" }
    }

    /// Whether the device applies ``automaticallyAppliedProfileName`` by itself when it is opened
    /// and when it comes back after an unplug, before the first frame. On by default; nothing
    /// happens while no profile of that name is saved.
    public var automaticallyAppliesProfile: Bool {
        get { profiles.withLock { $0.automaticallyApplies } }
        set { profiles.withLock { $0.automaticallyApplies = newValue } }
    }

    /// The profile applied automatically (``defaultProfileName`` unless set).
    public var automaticallyAppliedProfileName: String {
        get { profiles.withLock { $0.automaticName } }
        set { profiles.withLock { $0.automaticName = newValue } }
    }

    /// The names of the profiles saved for this device, sorted.
    public var savedProfileNames: [String] { profileStore.names(for: uniqueID) }

    /// Saves the device's writable generic control values (``controls``, except read-only,
    /// inactive and button controls), its ``activeFormat`` and ``activeVideoMinFrameDuration``
    /// as profile `name`, replacing a profile of that name. Throws
    /// ``CaptureError/Code/invalidArgument`` for a name that cannot be a file name,
    /// ``CaptureError/Code/deviceNotFound`` when the device is gone, or the file system's error.
    public func saveProfile(named name: String = CaptureDevice.defaultProfileName) throws(CaptureError) {
        try CameraProfileStore.validate(name: name)
        guard isConnected else {
            throw CaptureError(
                .deviceNotFound, "'\(localizedName)' is no longer connected: reconnect it before saving a profile")
        }
        var profile = CameraProfile()
        profile.uniqueID = uniqueID
        profile.localizedName = localizedName
        let format = activeFormat
        if format.mediaType == .video, formats.contains(format) {
            profile.format = CameraProfile.FormatEntry(
                pixelFormat: format.pixelFormat.fourCC, width: format.dimensions.width,
                height: format.dimensions.height, emulated: format.isEmulated)
            let duration = activeVideoMinFrameDuration
            if duration.isNumeric { profile.frameDuration = CameraProfile.formatDuration(duration) }
        }
        var values: [String: Int] = [:]
        for control in controls where !control.isReadOnly && !control.isInactive && control.kind != .button {
            if let value = try? value(of: control.id) { values[control.id.rawValue] = value }
        }
        profile.controls = values
        try profileStore.save(profile, for: uniqueID, name: name)
    }

    /// Applies profile `name`: its active format and frame duration (as ``setActiveFormat(_:)``
    /// and ``setActiveVideoMinFrameDuration(_:)`` would, so a running session restarts in them),
    /// then its control values (as ``setValue(_:for:)``). Takes the configuration lock itself.
    ///
    /// Values the device refuses are skipped and returned; the rest apply. Throws
    /// ``CaptureError/Code/invalidArgument`` when there is no such profile or its file is not a
    /// profile (the message says where), ``CaptureError/Code/deviceNotFound`` when the device is
    /// gone.
    @discardableResult
    public func applyProfile(named name: String = CaptureDevice.defaultProfileName) throws(CaptureError)
        -> [ProfileProblem]
    {
        let profile = try profileStore.load(for: uniqueID, name: name)
        return try apply(profile, changingFormat: true)
    }

    /// Removes profile `name`; nothing when there is none. Throws
    /// ``CaptureError/Code/invalidArgument`` for a name that cannot be a profile's, or the file
    /// system's error.
    public func removeProfile(named name: String) throws(CaptureError) {
        try profileStore.remove(for: uniqueID, name: name)
    }

    // MARK: Package

    /// Where this device's profiles live.
    package var profileStore: CameraProfileStore {
        get { profiles.withLock { $0.store } ?? CameraProfileStore.standard() }
        set { profiles.withLock { $0.store = newValue } }
    }

    /// The device was lost: the next open applies the automatic profile again.
    package func profileNeedsReapplying() {
        profiles.withLock { $0.appliedSinceConnect = false }
    }

    /// Called as a session opens the device (before negotiating and starting its stream): the
    /// first open since the device (re)connected applies the automatic profile, if there is one,
    /// and posts ``didApplyProfileNotification``. Never throws: what fails is reported.
    package func applyAutomaticProfileIfNeeded() {
        let name = profiles.withLock { state -> String? in
            guard state.automaticallyApplies, !state.appliedSinceConnect else { return nil }
            state.appliedSinceConnect = true
            return state.automaticName
        }
        guard let name, (try? CameraProfileStore.validate(name: name)) != nil else { return }
        let store = profileStore
        guard FileManager.default.fileExists(atPath: store.file(for: uniqueID, name: name).path) else { return }
        var problems: [ProfileProblem]
        do throws(CaptureError) {
            let profile = try store.load(for: uniqueID, name: name)
            // A device another session streams keeps its format: that session chose it.
            problems = try apply(profile, changingFormat: streamingSession == nil)
        } catch {
            problems = [ProfileProblem(setting: .profileFile, error: error)]
        }
        NotificationCenter.default.post(
            name: Self.didApplyProfileNotification, object: self,
            userInfo: [CaptureDeviceProfileNameKey: name, CaptureDeviceProfileProblemsKey: problems])
    }

    private func apply(_ profile: CameraProfile, changingFormat: Bool) throws(CaptureError) -> [ProfileProblem] {
        try lockForConfiguration()
        defer { unlockForConfiguration() }
        var problems: [ProfileProblem] = []
        if changingFormat, let entry = profile.format {
            if let format = formats.first(where: { CameraProfile.matches(entry, $0) }) {
                do throws(CaptureError) {
                    if format != activeFormat || !userChoseFormat { try setActiveFormat(format) }
                } catch {
                    problems.append(ProfileProblem(setting: .activeFormat, error: error))
                }
            } else {
                problems.append(
                    ProfileProblem(
                        setting: .activeFormat,
                        error: CaptureError(
                            .unsupportedFormat,
                            "'\(localizedName)' no longer offers \(entry.pixelFormat) \(entry.width)x\(entry.height): pick one of its `formats` and save the profile again"
                        )))
            }
            if problems.isEmpty, let text = profile.frameDuration {
                do throws(CaptureError) {
                    guard let duration = CameraProfile.parseDuration(text) else {
                        throw CaptureError(
                            .invalidArgument,
                            "the frame duration '\(text)' is not 'value/timescale' seconds: write it as \"1/30\"")
                    }
                    try setActiveVideoMinFrameDuration(duration)
                } catch {
                    problems.append(ProfileProblem(setting: .activeVideoMinFrameDuration, error: error))
                }
            }
        }
        for (key, value) in (profile.controls ?? [:]).sorted(by: { $0.key < $1.key }) {
            let id = Control.ID(rawValue: key)
            do throws(CaptureError) {
                try setValue(value, for: id)
            } catch {
                problems.append(ProfileProblem(setting: .control(id, value: value), error: error))
            }
        }
        return problems
    }
}

/// The `userInfo` key of ``CaptureDevice/didApplyProfileNotification`` whose value is the
/// profile's name (a `String`).
// swift-format-ignore: AlwaysUseLowerCamelCase
public let CaptureDeviceProfileNameKey = "ViewfinderCaptureDeviceProfileNameKey"

/// The `userInfo` key of ``CaptureDevice/didApplyProfileNotification`` whose value is the values
/// the device refused (`[CaptureDevice.ProfileProblem]`, empty when every value applied).
// swift-format-ignore: AlwaysUseLowerCamelCase
public let CaptureDeviceProfileProblemsKey = "ViewfinderCaptureDeviceProfileProblemsKey"
