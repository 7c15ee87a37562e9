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
/// the device is opened (the first session that streams it after it connected) and each time it
/// comes back after an unplug or a suspend, before the first frame is delivered
/// (``automaticallyAppliesProfile``). Values changed while the camera stays plugged in are kept
/// across session restarts, as the camera keeps them.
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
            /// The saved focus mode or lens position.
            case focus
            /// The saved exposure mode or duration.
            case exposure
            /// The saved white-balance mode or temperature.
            case whiteBalance
            /// The saved zoom factor.
            case videoZoomFactor
            /// The saved torch mode.
            case torchMode
            /// The saved anti-flicker frequency.
            case powerLineFrequency
            /// The profile's file itself (it could not be read: applied automatically, nothing applied).
            case profileFile

            public var description: String {
                switch self {
                case .control(let id, let value): return "control \(id) = \(value)"
                case .activeFormat: return "active format"
                case .activeVideoMinFrameDuration: return "frame duration"
                case .focus: return "focus"
                case .exposure: return "exposure"
                case .whiteBalance: return "white balance"
                case .videoZoomFactor: return "zoom factor"
                case .torchMode: return "torch mode"
                case .powerLineFrequency: return "power-line frequency"
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
    /// inactive and button controls), its typed camera settings (focus mode and lens position,
    /// exposure mode and duration, white-balance mode and temperature, zoom, torch, anti-flicker:
    /// those the camera has), its ``activeFormat`` and ``activeVideoMinFrameDuration`` as profile
    /// `name`, replacing a profile of that name. Throws
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
                pixelFormat: format.pixelFormat.fourCC, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight, emulated: format.isEmulated)
            let duration = activeVideoMinFrameDuration
            if duration.isNumeric { profile.frameDuration = CameraProfile.formatDuration(duration) }
        }
        let camera = savedCameraSettings()
        profile.camera = camera == CameraProfile.CameraEntry() ? nil : camera
        var values: [String: Int] = [:]
        for control in controls where !control.isReadOnly && !control.isInactive && control.kind != .button {
            // The white-balance temperature is kept with the white-balance mode, which it needs.
            if control.id == .whiteBalanceTemperature && camera.whiteBalanceTemperature != nil { continue }
            if let value = try? value(of: control.id) { values[control.id.rawValue] = value }
        }
        profile.controls = values
        try profileStore.save(profile, for: uniqueID, name: name)
    }

    /// Applies profile `name`: its active format and frame duration (as ``setActiveFormat(_:)``
    /// and ``setActiveVideoMinFrameDuration(_:)`` would, so a running session restarts in them),
    /// its typed camera settings (as ``setFocusModeLocked(lensPosition:)``,
    /// ``setExposureModeCustom(duration:)``, ``setWhiteBalanceModeLocked(temperature:)`` and the
    /// other setters would), then its control values (as ``setValue(_:for:)``). Takes the configuration lock itself.
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
        if let camera = profile.camera { problems += apply(camera) }
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

extension CaptureDevice {
    /// The typed settings the camera has, as a profile keeps them.
    fileprivate func savedCameraSettings() -> CameraProfile.CameraEntry {
        var entry = CameraProfile.CameraEntry()
        let focusModes: [FocusMode] = [.locked, .autoFocus, .continuousAutoFocus]
        if focusModes.contains(where: isFocusModeSupported) {
            entry.focusMode = "\(focusMode)"
            if focusMode == .locked && isLockingFocusWithCustomLensPositionSupported {
                entry.lensPosition = lensPosition
            }
        }
        let exposureModes: [ExposureMode] = [.locked, .autoExpose, .continuousAutoExposure, .custom]
        if exposureModes.contains(where: isExposureModeSupported) {
            entry.exposureMode = "\(exposureMode)"
            if exposureMode == .custom || exposureMode == .locked, exposureDuration.isNumeric {
                entry.exposureDuration = CameraProfile.formatDuration(exposureDuration)
            }
        }
        let whiteBalanceModes: [WhiteBalanceMode] = [.locked, .autoWhiteBalance, .continuousAutoWhiteBalance]
        if whiteBalanceModes.contains(where: isWhiteBalanceModeSupported) {
            entry.whiteBalanceMode = "\(whiteBalanceMode)"
            if whiteBalanceMode == .locked { entry.whiteBalanceTemperature = whiteBalanceTemperature }
        }
        if maxAvailableVideoZoomFactor > 1 { entry.videoZoomFactor = videoZoomFactor }
        if hasTorch { entry.torchMode = "\(torchMode)" }
        entry.powerLineFrequency = powerLineFrequency.map { "\($0)" }
        return entry
    }

    /// The value named `text` among `values` (by case name), or the error saying which names exist.
    private func named<T>(_ text: String, _ values: [T], _ what: String) throws(CaptureError) -> T {
        guard let value = values.first(where: { "\($0)" == text }) else {
            throw CaptureError(
                .invalidArgument,
                "'\(text)' is not a \(what): use one of \(values.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return value
    }

    /// Applies the typed settings of a profile (anti-flicker, zoom and torch, then each mode with
    /// the value it needs); returns what the camera refused. The configuration lock is held.
    fileprivate func apply(_ entry: CameraProfile.CameraEntry) -> [ProfileProblem] {
        var problems: [ProfileProblem] = []
        func attempt(_ setting: ProfileProblem.Setting, _ body: () throws(CaptureError) -> Void) {
            do throws(CaptureError) {
                try body()
            } catch {
                problems.append(ProfileProblem(setting: setting, error: error))
            }
        }
        if let text = entry.powerLineFrequency {
            attempt(.powerLineFrequency) { () throws(CaptureError) in
                try setPowerLineFrequency(try named(text, PowerLineFrequency.allCases, "power-line frequency"))
            }
        }
        if let factor = entry.videoZoomFactor {
            attempt(.videoZoomFactor) { () throws(CaptureError) in try setVideoZoomFactor(factor) }
        }
        if let text = entry.torchMode {
            attempt(.torchMode) { () throws(CaptureError) in
                try setTorchMode(try named(text, [TorchMode.off, .on, .auto], "torch mode"))
            }
        }
        if let text = entry.focusMode {
            attempt(.focus) { () throws(CaptureError) in
                let mode = try named(text, [FocusMode.locked, .autoFocus, .continuousAutoFocus], "focus mode")
                if mode == .locked, let position = entry.lensPosition {
                    try setFocusModeLocked(lensPosition: position)
                } else {
                    try setFocusMode(mode)
                }
            }
        }
        if let text = entry.exposureMode {
            attempt(.exposure) { () throws(CaptureError) in
                let modes: [ExposureMode] = [.locked, .autoExpose, .continuousAutoExposure, .custom]
                let mode = try named(text, modes, "exposure mode")
                if mode == .custom || mode == .locked, let durationText = entry.exposureDuration {
                    guard let duration = CameraProfile.parseDuration(durationText) else {
                        throw CaptureError(
                            .invalidArgument,
                            "the exposure duration '\(durationText)' is not 'value/timescale' seconds: write it as \"1/100\""
                        )
                    }
                    try setExposureModeCustom(duration: duration)
                    if mode == .locked { try setExposureMode(.locked) }
                } else {
                    try setExposureMode(mode)
                }
            }
        }
        if let text = entry.whiteBalanceMode {
            attempt(.whiteBalance) { () throws(CaptureError) in
                let modes: [WhiteBalanceMode] = [.locked, .autoWhiteBalance, .continuousAutoWhiteBalance]
                let mode = try named(text, modes, "white-balance mode")
                if mode == .locked, let kelvin = entry.whiteBalanceTemperature {
                    try setWhiteBalanceModeLocked(temperature: kelvin)
                } else {
                    try setWhiteBalanceMode(mode)
                }
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
