import Foundation

/// The extension units Viewfinder knows, from public documentation of each (the GUIDs, selectors
/// and layouts that Logitech's uvcdynctrl mappings and cameractrls describe).
extension CaptureDevice.ExtensionUnit {
    /// The built-in maps: ``logitechPeripheral``, ``logitechUserHardwareControl`` and
    /// ``elgatoFacecamDynamicRange``.
    public static let builtIn: [CaptureDevice.ExtensionUnit] = [
        logitechPeripheral, logitechUserHardwareControl, elgatoFacecamDynamicRange,
    ]

    /// The LED menu Logitech's units share: 0 off, 1 on, 2 blinking, 3 automatic (lit while the
    /// camera streams).
    private static let logitechLEDModes: [CaptureDevice.Control.MenuItem] = [
        .init(value: 0, name: "Off"), .init(value: 1, name: "On"), .init(value: 2, name: "Blinking"),
        .init(value: 3, name: "Auto"),
    ]

    /// Logitech's peripheral unit (`ffe52d21-8030-4e2c-82d9-f587d00540bd`: C920 and later, BRIO,
    /// StreamCam): the LED, selector 9, a 5-byte control whose byte 1 is the mode
    /// (``CaptureDevice/Control/ID/ledMode``) and byte 3 the blink frequency in 0.05 Hz steps
    /// (``CaptureDevice/Control/ID/ledFrequency``).
    public static let logitechPeripheral = CaptureDevice.ExtensionUnit(
        guid: UUID(uuidString: "ffe52d21-8030-4e2c-82d9-f587d00540bd")!, name: "Logitech peripheral",
        controls: [
            .init(
                id: .ledMode, name: "LED Mode", selector: 9, size: 5, byteOffset: 1, byteCount: 1, type: .menu,
                menuItems: logitechLEDModes),
            .init(
                id: .ledFrequency, name: "LED Frequency", selector: 9, size: 5, byteOffset: 3, byteCount: 1,
                type: .unsignedInteger),
        ])

    /// Logitech's older user hardware control unit (`63610682-5070-49ab-b8cc-b3855e8d221f`:
    /// QuickCam and C9xx cameras): the LED, selector 1, a 3-byte control whose byte 0 is the mode
    /// (``CaptureDevice/Control/ID/ledMode``) and byte 2 the blink frequency
    /// (``CaptureDevice/Control/ID/ledFrequency``).
    public static let logitechUserHardwareControl = CaptureDevice.ExtensionUnit(
        guid: UUID(uuidString: "63610682-5070-49ab-b8cc-b3855e8d221f")!, name: "Logitech user hardware control",
        controls: [
            .init(
                id: .ledMode, name: "LED Mode", selector: 1, size: 3, byteOffset: 0, byteCount: 1, type: .menu,
                menuItems: logitechLEDModes),
            .init(
                id: .ledFrequency, name: "LED Frequency", selector: 1, size: 3, byteOffset: 2, byteCount: 1,
                type: .unsignedInteger),
        ])

    /// Elgato Facecam MK.2's dynamic-range unit (`23e49ed0-1178-4f31-ae52-d2fb8a8d3001`): HDR,
    /// selector 0x15, byte 0 (0 low, 1 high: ``CaptureDevice/Control/ID/highDynamicRange``). The
    /// camera's `GET_CUR` does not report the mode, so the value read is the last one set.
    public static let elgatoFacecamDynamicRange = CaptureDevice.ExtensionUnit(
        guid: UUID(uuidString: "23e49ed0-1178-4f31-ae52-d2fb8a8d3001")!, name: "Elgato Facecam dynamic range",
        controls: [
            .init(
                id: .highDynamicRange, name: "Dynamic Range", selector: 0x15, byteOffset: 0, byteCount: 1,
                type: .menu, defaultValue: 0,
                menuItems: [.init(value: 0, name: "Low"), .init(value: 1, name: "High (HDR)")],
                reportsCurrentValue: false)
        ])
}
