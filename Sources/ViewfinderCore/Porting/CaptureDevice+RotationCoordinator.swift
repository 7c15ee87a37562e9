import Synchronization

extension CaptureDevice {
    /// The rotations that keep pictures level (the counterpart of
    /// `AVCaptureDevice.RotationCoordinator`).
    ///
    /// On iOS it follows the gravity sensor. Linux has none, so it follows the preview: both
    /// angles are the rotation of the preview layer's connection (its ``CaptureConnection/videoRotationAngle``,
    /// which the application sets for its display), or 0° — the camera's own, level orientation —
    /// without a preview layer or before the layer has a connection. AVCam-style code that
    /// applies ``videoRotationAngleForHorizonLevelCapture`` to its photo or movie connection so
    /// records what the preview shows; both angles are observable with
    /// ``observe(_:options:changeHandler:)``, and report a change when the preview connection's
    /// rotation changes (on the thread that changed it).
    ///
    /// Thread safety: may be used from any thread.
    public final class RotationCoordinator: Sendable {
        private let deviceReference: WeakReference<CaptureDevice>
        private let previewLayerReference: WeakReference<CaptureVideoPreviewLayer>
        package let observers = _KeyValueObservers()
        private let previewObservation = Mutex<NSKeyValueObservation?>(nil)

        /// A coordinator for `device`, whose preview is `previewLayer` (`nil` when there is none).
        public init(device: CaptureDevice, previewLayer: CaptureVideoPreviewLayer?) {
            deviceReference = WeakReference(device)
            previewLayerReference = WeakReference(previewLayer)
            guard let connection = previewLayer?.connection else { return }
            let observation = connection.observe(\.videoRotationAngle, options: [.new]) { [weak self] _, change in
                guard let self, let angle = change.newValue else { return }
                didChangeValue(for: \.videoRotationAngleForHorizonLevelPreview, to: angle)
                didChangeValue(for: \.videoRotationAngleForHorizonLevelCapture, to: angle)
            }
            previewObservation.withLock { $0 = observation }
        }

        /// The device (held weakly, as AVFoundation holds it).
        public var device: CaptureDevice? { deviceReference.value }

        /// The preview layer (held weakly).
        public var previewLayer: CaptureVideoPreviewLayer? { previewLayerReference.value }

        /// The rotation, in degrees, to set on the preview layer's connection: its own current
        /// rotation, or 0 (see the type's description).
        public var videoRotationAngleForHorizonLevelPreview: Double {
            previewLayer?.connection?.videoRotationAngle ?? 0
        }

        /// The rotation, in degrees, to set on a photo or movie connection so captures are level:
        /// the same as ``videoRotationAngleForHorizonLevelPreview`` (see the type's description).
        public var videoRotationAngleForHorizonLevelCapture: Double { videoRotationAngleForHorizonLevelPreview }
    }
}

extension CaptureDevice.RotationCoordinator: _KeyValueObservable {
    /// The coordinator's observers (see ``observe(_:options:changeHandler:)``).
    public var _keyValueObservers: _KeyValueObservers { observers }

    /// Observable: both angles.
    public static var _observableKeyPaths: [AnyKeyPath: String] {
        [
            \CaptureDevice.RotationCoordinator.videoRotationAngleForHorizonLevelPreview:
                "videoRotationAngleForHorizonLevelPreview",
            \CaptureDevice.RotationCoordinator.videoRotationAngleForHorizonLevelCapture:
                "videoRotationAngleForHorizonLevelCapture",
        ]
    }
}
