import Foundation
import Synchronization
import ViewfinderCore

/// The virtual test-pattern camera and virtual microphone as devices of the process: opt-in, so
/// that a machine without a camera lists none (``CaptureDevice/default(for:)`` is `nil`, as in
/// AVFoundation) and an app's camera picker shows no test pattern.
///
/// Opt in with ``register()``, or set `VIEWFINDER_VIRTUAL_DEVICES=1` in the environment of a
/// process that links the umbrella `Viewfinder` module (test setups and CI scripts do).
///
/// Thread safety: all members may be used from any thread.
public enum VirtualDevices {
    /// The environment variable that adds the virtual devices to the built-in ones: `1`.
    public static let environmentVariable = "VIEWFINDER_VIRTUAL_DEVICES"

    /// Whether `environment` asks for the virtual devices (`VIEWFINDER_VIRTUAL_DEVICES=1`).
    public static func isRequested(in environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment[environmentVariable] == "1"
    }

    /// Fresh providers of the virtual camera ("Test Pattern Camera", after every real camera) and
    /// the virtual microphone (after every real microphone).
    public static func makeProviders() -> [any DeviceProvider] {
        [VirtualCameraProvider(), VirtualMicrophoneProvider()]
    }

    private static let registered = Mutex(false)

    /// Adds the virtual camera and microphone to the process's devices (once; later calls do
    /// nothing). A process whose environment set `VIEWFINDER_VIRTUAL_DEVICES=1` has them already.
    public static func register() {
        let first = registered.withLock { done in
            defer { done = true }
            return !done
        }
        guard first, !DeviceRegistry.shared.providerList().contains(where: { $0 is VirtualCameraProvider }) else {
            return
        }
        for provider in makeProviders() { CaptureDevice.registerProvider(provider) }
    }
}
