import Dispatch

extension CaptureDevice {
    /// Whether the process may capture a media type (the counterpart of
    /// `AVAuthorizationStatus`). Linux has no privacy prompt: the answer comes from the device
    /// nodes' permissions, so ``notDetermined`` never occurs.
    public enum AuthorizationStatus: Int, Sendable, Hashable {
        /// Never reported on Linux (there is nothing to ask the user).
        case notDetermined = 0
        /// A policy the user cannot change refuses access: opening the nodes fails with `EPERM`
        /// (a container's device cgroup, a security module).
        case restricted = 1
        /// The nodes exist but the user may not open them (`EACCES`): add the user to the
        /// `video` (cameras) or `audio` (microphones) group; ``authorizationError(for:)`` says so.
        case denied = 2
        /// A device node opens, or there is nothing to refuse (only virtual devices).
        case authorized = 3
    }

    /// Whether the process may capture `mediaType`, answered at once from the device nodes
    /// (authorized when one opens, denied when permission is refused, restricted when a policy
    /// refuses it). Never prompts.
    public static func authorizationStatus(for mediaType: MediaType) -> AuthorizationStatus {
        DeviceRegistry.current.authorization(for: mediaType).status
    }

    /// Why access is not authorized, with what to do (the `video`/`audio` group hint); `nil`
    /// when ``authorizationStatus(for:)`` is ``AuthorizationStatus/authorized``.
    public static func authorizationError(for mediaType: MediaType) -> CaptureError? {
        DeviceRegistry.current.authorization(for: mediaType).error
    }

    /// Calls `handler` with whether ``authorizationStatus(for:)`` is authorized (the counterpart
    /// of `requestAccess(for:completionHandler:)`). Shows nothing and asks nobody: Linux grants
    /// access through group membership. `handler` runs on a global queue, as AVFoundation's
    /// runs on an arbitrary one.
    public static func requestAccess(
        for mediaType: MediaType, completionHandler handler: @escaping @Sendable (Bool) -> Void
    ) {
        let registry = DeviceRegistry.current
        DispatchQueue.global().async { handler(registry.authorization(for: mediaType).status == .authorized) }
    }

    /// Whether ``authorizationStatus(for:)`` is authorized (the `async` form of
    /// ``requestAccess(for:completionHandler:)``).
    public static func requestAccess(for mediaType: MediaType) async -> Bool {
        authorizationStatus(for: mediaType) == .authorized
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

/// A provider whose devices live behind nodes the operating system may refuse to open.
package protocol AuthorizingDeviceProvider: DeviceProvider {
    /// Whether the nodes for `mediaType` open; `nil` when this provider has no nodes for it.
    func authorization(for mediaType: MediaType) -> DeviceAuthorization?
}

extension DeviceRegistry {
    /// Combines the providers' answers: authorized if any node opens (or no provider has nodes:
    /// only virtual devices, nothing to refuse), else denied if any refused permission, else
    /// restricted.
    package func authorization(for mediaType: MediaType) -> DeviceAuthorization {
        let answers = providerList().compactMap {
            ($0 as? any AuthorizingDeviceProvider)?.authorization(for: mediaType)
        }
        if answers.isEmpty || answers.contains(where: { $0.status == .authorized }) {
            return DeviceAuthorization(status: .authorized)
        }
        return answers.first { $0.status == .denied } ?? answers[0]
    }
}
