import Dispatch

extension CaptureDevice {
    /// Whether the process may capture a media type (the counterpart of
    /// `AVAuthorizationStatus`). Outside a sandbox Linux has no privacy prompt: the answer comes
    /// from the device nodes' permissions, so ``notDetermined`` never occurs. Through the Camera
    /// portal (a Flatpak sandbox, or `VIEWFINDER_CAMERA_PORTAL=1`) the portal's answer is the
    /// status: ``notDetermined`` until the user has answered.
    public enum AuthorizationStatus: Int, Sendable, Hashable {
        /// The user has not answered the Camera portal yet (only through the portal; without it
        /// there is nothing to ask).
        case notDetermined = 0
        /// A policy the user cannot change refuses access: opening the nodes fails with `EPERM`
        /// (a container's device cgroup, a security module), or the Camera portal is missing or
        /// has the camera disabled.
        case restricted = 1
        /// The nodes exist but the user may not open them (`EACCES`): add the user to the
        /// `video` (cameras) or `audio` (microphones) group; or the Camera portal refused (now or
        /// in a stored answer). ``authorizationError(for:)`` says what to do.
        case denied = 2
        /// A device node opens, or there is nothing to refuse (only virtual devices).
        case authorized = 3
    }

    /// Whether the process may capture `mediaType`, answered at once from the device nodes
    /// (authorized when one opens, denied when permission is refused, restricted when a policy
    /// refuses it), or for video through the Camera portal from the portal. Never prompts.
    public static func authorizationStatus(for mediaType: MediaType) -> AuthorizationStatus {
        DeviceRegistry.current.authorization(for: mediaType).status
    }

    /// Why access is not authorized, with what to do (the `video`/`audio` group hint, or the
    /// `flatpak permission-remove devices camera APP` that resets a refusal stored by the Camera
    /// portal); `nil` when ``authorizationStatus(for:)`` is ``AuthorizationStatus/authorized`` or
    /// ``AuthorizationStatus/notDetermined``.
    public static func authorizationError(for mediaType: MediaType) -> CaptureError? {
        DeviceRegistry.current.authorization(for: mediaType).error
    }

    /// Calls `handler` with whether access is granted (the counterpart of
    /// `requestAccess(for:completionHandler:)`). Outside a sandbox this shows nothing and asks
    /// nobody: Linux grants access through group membership. Where cameras come through the
    /// Camera portal (inside a Flatpak sandbox, or with `VIEWFINDER_CAMERA_PORTAL=1`), video
    /// access is asked of the portal, which asks the user once and remembers the answer; a
    /// refusal leaves ``authorizationStatus(for:)`` ``AuthorizationStatus/denied`` and
    /// ``authorizationError(for:)`` saying how to reset it. `handler` runs on a global queue, as
    /// AVFoundation's runs on an arbitrary one.
    public static func requestAccess(
        for mediaType: MediaType, completionHandler handler: @escaping @Sendable (Bool) -> Void
    ) {
        let registry = DeviceRegistry.current
        DispatchQueue.global().async { handler(registry.requestAccess(for: mediaType).status == .authorized) }
    }

    /// Whether access is granted, asking the Camera portal where cameras come through it (the
    /// `async` form of ``requestAccess(for:completionHandler:)``).
    public static func requestAccess(for mediaType: MediaType) async -> Bool {
        let registry = DeviceRegistry.current
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: registry.requestAccess(for: mediaType).status == .authorized)
            }
        }
    }
}

/// A provider's answer about access to its devices' nodes.
package struct DeviceAuthorization: Sendable {
    /// The status.
    package var status: CaptureDevice.AuthorizationStatus
    /// What refused access and what to do, when not authorized.
    package var error: CaptureError?

    /// An answer.
    package init(status: CaptureDevice.AuthorizationStatus, error: CaptureError? = nil) {
        self.status = status
        self.error = error
    }
}

/// A backend whose device is listed although this process may not open it (a V4L2 node that
/// fails with `EACCES`: the user is not in the `video` group), as AVFoundation lists a camera the
/// app is not authorized to use. ``CaptureDeviceInput/init(device:)`` throws its refusal.
package protocol AccessRefusingBackend: DeviceBackend {
    /// Why the device cannot be opened, with what to do; `nil` when it can be.
    var accessRefusal: CaptureError? { get }
}

/// A provider whose devices live behind nodes the operating system may refuse to open.
package protocol AuthorizingDeviceProvider: DeviceProvider {
    /// Whether the nodes for `mediaType` open; `nil` when this provider has no nodes for it.
    func authorization(for mediaType: MediaType) -> DeviceAuthorization?
}

/// A provider that asks someone for access (the Camera portal): its answer replaces the nodes'.
package protocol AccessRequestingDeviceProvider: AuthorizingDeviceProvider {
    /// Asks for access to `mediaType` (may block until a person answers); `nil` when this
    /// provider does not decide that media type.
    func requestAccess(for mediaType: MediaType) -> DeviceAuthorization?
}

extension DeviceRegistry {
    /// Combines the providers' answers: a provider that asks for access (the Camera portal)
    /// decides alone; otherwise authorized if any node opens (or no provider has nodes: only
    /// virtual devices, nothing to refuse), else denied if any refused permission, else
    /// restricted.
    package func authorization(for mediaType: MediaType) -> DeviceAuthorization {
        let providers = providerList()
        for case let asking as any AccessRequestingDeviceProvider in providers {
            if let answer = asking.authorization(for: mediaType) { return answer }
        }
        let answers = providers.compactMap {
            ($0 as? any AuthorizingDeviceProvider)?.authorization(for: mediaType)
        }
        if answers.isEmpty || answers.contains(where: { $0.status == .authorized }) {
            return DeviceAuthorization(status: .authorized)
        }
        return answers.first { $0.status == .denied } ?? answers[0]
    }

    /// Asks the provider that asks for access (the Camera portal), or answers as
    /// ``authorization(for:)`` when none decides `mediaType`.
    package func requestAccess(for mediaType: MediaType) -> DeviceAuthorization {
        for case let asking as any AccessRequestingDeviceProvider in providerList() {
            if let answer = asking.requestAccess(for: mediaType) { return answer }
        }
        return authorization(for: mediaType)
    }
}
