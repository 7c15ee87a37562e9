// viewfinder-access-probe: the V4L2 cameras of a directory as this process's user meets them.
//
//     viewfinder-access-probe DIRECTORY
//
// Registers a V4L2DeviceProvider for DIRECTORY (nothing else: no virtual devices), then prints one
// line per fact, tab-separated, for the permission test (CameraPermissionTests), which runs it as
// an unprivileged user when the tests run as root (root opens any file whatever its mode):
//
//     uid UID
//     device UNIQUE_ID NAME FORMAT_COUNT
//     authorization STATUS
//     authorization-error CODE MESSAGE
//     open UNIQUE_ID ok | open-error UNIQUE_ID CODE ERRNO MESSAGE
import Foundation
import ViewfinderCore
import ViewfinderV4L2

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: viewfinder-access-probe DIRECTORY\n".utf8))
    exit(2)
}
CaptureDevice.registerProvider(V4L2DeviceProvider(directoryPath: arguments[1]))
print("uid\t\(getuid())")
let devices = CaptureDevice.devices(for: .video)
for device in devices {
    print("device\t\(device.uniqueID)\t\(device.localizedName)\t\(device.formats.count)")
}
print("authorization\t\(CaptureDevice.authorizationStatus(for: .video))")
if let error = CaptureDevice.authorizationError(for: .video) {
    print("authorization-error\t\(error.code)\t\(error.message)")
}
for device in devices {
    do {
        _ = try CaptureDeviceInput(device: device)
        print("open\t\(device.uniqueID)\tok")
    } catch {
        print("open-error\t\(device.uniqueID)\t\(error.code)\t\(error.errno ?? 0)\t\(error.message)")
    }
}
