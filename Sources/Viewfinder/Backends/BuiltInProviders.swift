/// The device providers every process starts with: V4L2 and PipeWire cameras first, then ALSA microphones,
/// the virtual test-pattern camera and the virtual microphone last. A backend joins the library
/// by adding its provider here; nothing in `Devices/` names a backend.
///
/// Thread safety: a stateless namespace.
enum BuiltInProviders {
    /// A fresh list of the built-in providers, in the order the registry consults them.
    static func make() -> [any DeviceProvider] {
        [
            V4L2DeviceProvider(), PipeWireDeviceProvider.shared, ALSADeviceProvider(), VirtualCameraProvider(),
            VirtualMicrophoneProvider(),
        ]
    }
}
