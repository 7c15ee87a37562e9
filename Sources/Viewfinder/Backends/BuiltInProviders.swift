/// The device providers every process starts with: V4L2 and PipeWire cameras first, then ALSA
/// microphones, the virtual test-pattern camera and the virtual microphone last. Each is registered
/// through ``DeviceRegistry/register(_:)``, the call behind the public
/// ``CaptureDevice/registerProvider(_:)``, so a built-in backend joins the library the way any
/// other does; nothing in `Devices/` names a backend. The Camera portal's provider joins inside a
/// Flatpak sandbox or when `VIEWFINDER_CAMERA_PORTAL=1` asks for it.
///
/// Thread safety: a stateless namespace.
enum BuiltInProviders {
    /// A fresh list of the built-in providers, in the order the registry consults them.
    static func make() -> [any DeviceProvider] {
        [
            V4L2DeviceProvider(), PipeWireDeviceProvider.shared, ALSADeviceProvider(), VirtualCameraProvider(),
            VirtualMicrophoneProvider(),
        ] + CameraPortalProvider.builtIn()
    }

    /// Registers a fresh set of the built-in providers with `registry`.
    static func register(in registry: DeviceRegistry) {
        for provider in make() { registry.register(provider) }
    }
}
