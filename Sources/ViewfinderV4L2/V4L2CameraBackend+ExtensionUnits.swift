import CV4L2
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// A V4L2 camera's UVC extension units: what its descriptors declare (set by the provider's
/// scan), the controls resolved from the registered maps (``ExtensionUnitRegistry``) and the
/// values set on controls whose value the camera does not report.
///
/// Thread safety: used under the backend's mutex.
package struct ExtensionUnitState: Sendable {
    /// The units the USB descriptors declare; `nil`: the descriptors could not be read.
    var descriptors: [UVCExtensionUnitDescriptor]?
    /// The controls resolved, and the registry generation they were resolved with.
    var resolved: (generation: Int, controls: [UVCExtensionControl])?
    /// The last value set on each control, since the camera connected.
    var written: [CaptureDevice.Control.ID: Int] = [:]

    /// A camera that comes back is examined again and holds its defaults.
    mutating func forget() {
        resolved = nil
        written = [:]
    }
}

extension V4L2CameraBackend {
    /// Called by the provider's scan: the extension units the camera's USB descriptors declare
    /// (`nil`: they could not be read; maps that give a unit ID are tried then).
    package func update(extensionUnits units: [UVCExtensionUnitDescriptor]?) {
        extensionUnitState.withLock { state in
            guard state.descriptors != units else { return }
            state.descriptors = units
            state.resolved = nil
        }
    }

    /// The extension-unit controls the camera has, resolved again when `refresh` is set, when the
    /// registered maps changed, or on first use. Only uvcvideo cameras have extension units;
    /// `taken` are the driver's own controls, whose IDs a map's control may not take.
    func extensionControls(refresh: Bool, taken: [CaptureDevice.Control]) -> [UVCExtensionControl] {
        guard modelID == "uvcvideo", accessRefusal == nil, isConnected else { return [] }
        let generation = ExtensionUnitRegistry.generation
        let (cached, descriptors) = extensionUnitState.withLock { ($0.resolved, $0.descriptors) }
        if !refresh, let cached, cached.generation == generation { return cached.controls }
        let maps = ExtensionUnitRegistry.maps
        let interface = self.interface
        let ids = Set(taken.map(\.id))
        let resolved =
            (try? withDescriptor("listing the extension-unit controls of") { (fd) throws(V4L2Errno) in
                UVCExtensionControl.resolve(maps: maps, units: descriptors, taken: ids, fd: fd, interface: interface)
            }) ?? []
        extensionUnitState.withLock { $0.resolved = (generation, resolved) }
        return resolved
    }

    /// The extension-unit control `id`, if the camera has one.
    func extensionControl(_ id: CaptureDevice.Control.ID) -> UVCExtensionControl? {
        extensionControls(refresh: false, taken: cachedMap.generic.map(\.control)).first { $0.control.id == id }
    }

    /// Reads an extension-unit control: `GET_CUR`, or the last value set when the camera does
    /// not report it.
    func extensionValue(of control: UVCExtensionControl) throws(CaptureError) -> Int {
        guard control.readsCurrentValue else {
            return extensionUnitState.withLock { $0.written[control.control.id] } ?? control.control.defaultValue
        }
        let interface = self.interface
        let describe = { (failure: V4L2Errno) in self.extensionError(failure, control, "reading") }
        let bytes = try withDescriptor("reading '\(control.control.name)' of", describe: describe) {
            (fd) throws(V4L2Errno) in
            try UVCExtensionQuery.get(
                VF_UVC_GET_CUR, unit: control.unitID, selector: control.selector, size: control.size, fd: fd,
                interface: interface)
        }
        return control.value(in: bytes)
    }

    /// Writes an extension-unit control: its bits in the control's bytes (read first when the
    /// control holds other values too), then `SET_CUR`.
    func setExtensionValue(_ value: Int, of control: UVCExtensionControl) throws(CaptureError) {
        let interface = self.interface
        let wholeControl = control.bitOffset == 0 && control.bitCount == control.size * 8
        let describe = { (failure: V4L2Errno) in self.extensionError(failure, control, "setting") }
        try withDescriptor("setting '\(control.control.name)' of", describe: describe) { (fd) throws(V4L2Errno) in
            var bytes =
                !wholeControl && control.readsCurrentValue
                ? try UVCExtensionQuery.get(
                    VF_UVC_GET_CUR, unit: control.unitID, selector: control.selector, size: control.size, fd: fd,
                    interface: interface)
                : [UInt8](repeating: 0, count: control.size)
            UVCControlBits.write(value, into: &bytes, bitOffset: control.bitOffset, bitCount: control.bitCount)
            try UVCExtensionQuery.perform(
                VF_UVC_SET_CUR, unit: control.unitID, selector: control.selector, data: &bytes, fd: fd,
                interface: interface)
        }
        extensionUnitState.withLock { $0.written[control.control.id] = value }
    }

    /// What a failed `UVCIOC_CTRL_QUERY` means, for people.
    private func extensionError(_ failure: V4L2Errno, _ control: UVCExtensionControl, _ action: String)
        -> CaptureError
    {
        let what =
            "'\(control.control.name)' (\(control.unitName), unit \(control.unitID), selector \(control.selector))"
        switch failure.code {
        case ENOENT:
            return CaptureError(
                .unsupportedControl,
                "'\(localizedName)' has no extension-unit control \(what): its map does not fit this camera; check the map's GUID, unit ID and selector",
                errno: failure.code)
        case ERANGE:
            return CaptureError(
                .invalidArgument,
                "'\(localizedName)' refused \(action) \(what) as out of range: use \(control.control.rangeDescription), or correct the map's range",
                errno: failure.code)
        case EBADRQC, EACCES:
            return CaptureError(
                .unsupportedControl,
                "'\(localizedName)' does not allow \(action) \(what)", errno: failure.code)
        case ENOBUFS:
            return CaptureError(
                .driverError,
                "uvcvideo says \(what) of '\(localizedName)' is not \(control.size) bytes: the camera changed; list its controls again",
                errno: failure.code)
        case EPIPE:
            return CaptureError(
                .driverError,
                "'\(localizedName)' stalled \(action) \(what): the camera refused the request; check the value against the map",
                errno: failure.code)
        default:
            return CaptureError.v4l2(failure, "\(action) \(what) of", name: localizedName, path: path)
        }
    }
}
