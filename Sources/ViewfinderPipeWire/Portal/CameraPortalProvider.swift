/// The Camera portal as a device provider: it answers (and asks) for camera access in place of
/// the V4L2 nodes, which a sandbox hides. Its cameras are PipeWire nodes behind the remote the
/// portal opens, listed by the PipeWire backend once it has that remote; this provider lists none
/// itself.
///
/// Thread safety: immutable; the portal is `Sendable`.
import ViewfinderCore
import ViewfinderV4L2

package struct CameraPortalProvider: AccessRequestingDeviceProvider {
    /// The portal asked.
    package let portal: CameraPortal

    /// A provider asking `portal`.
    package init(portal: CameraPortal) {
        self.portal = portal
    }

    /// The provider the process starts with when ``CameraPortal/isWanted(environment:sandboxed:)``
    /// says so (inside a Flatpak sandbox, or `VIEWFINDER_CAMERA_PORTAL=1`); none otherwise. A
    /// granted remote goes to the built-in PipeWire provider, which lists the portal's cameras.
    package static func builtIn() -> [any DeviceProvider] {
        CameraPortal.isWanted()
            ? [CameraPortalProvider(portal: CameraPortal(receiver: PipeWireDeviceProvider.shared))] : []
    }

    package func discoverBackends() -> [any DeviceBackend] { [] }

    package var sortOrder: Int { 0 }

    package func authorization(for mediaType: MediaType) -> DeviceAuthorization? {
        mediaType == .video ? portal.authorization() : nil
    }

    package func requestAccess(for mediaType: MediaType) -> DeviceAuthorization? {
        mediaType == .video ? portal.requestAccess() : nil
    }
}
