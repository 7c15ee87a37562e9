import Foundation

/// The device providers a process that links the umbrella `Viewfinder` module starts with: V4L2
/// and PipeWire cameras first, then ALSA microphones; the virtual test-pattern camera and virtual
/// microphone last, only when `VIEWFINDER_VIRTUAL_DEVICES=1` asks for them
/// (``VirtualDevices/isRequested(in:)``) — as in AVFoundation, a machine without a camera has no
/// video device. Each is registered through ``DeviceRegistry/register(_:)``, the call behind the
/// public ``CaptureDevice/registerProvider(_:)``, so a built-in backend joins the library the way
/// any other does; the core names no backend. The Camera portal's provider joins inside a Flatpak
/// sandbox or when `VIEWFINDER_CAMERA_PORTAL=1` asks for it.
///
/// Thread safety: a stateless namespace.
package enum BuiltInProviders {
    /// A fresh list of the built-in providers for `environment`, in the order the registry
    /// consults them.
    package static func make(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [any DeviceProvider]
    {
        var providers: [any DeviceProvider] = [
            V4L2DeviceProvider(pipeWire: .shared), PipeWireDeviceProvider.shared, ALSADeviceProvider(),
        ]
        if VirtualDevices.isRequested(in: environment) { providers += VirtualDevices.makeProviders() }
        return providers + CameraPortalProvider.builtIn()
    }

    /// Registers a fresh set of the built-in providers with `registry`.
    package static func register(in registry: DeviceRegistry) {
        for provider in make() { registry.register(provider) }
    }
}
