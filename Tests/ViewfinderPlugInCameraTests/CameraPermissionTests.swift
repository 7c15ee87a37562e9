import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// A camera the user may not open (its node fails with `EACCES`: the user is not in the `video`
/// group) is listed, not left out: AVFoundation lists such a camera and answers its authorization
/// as denied, and so does Viewfinder, with the fix in the error.
///
/// The plug-in camera's node is a file in a directory of the test's own, made unreadable
/// (`chmod 000`). File modes do not stop root, and CI runs the tests as root, so the camera is
/// examined by a child process, `viewfinder-access-probe`, that runs as an unprivileged user
/// (`setpriv` to `nobody`, uid 65534, with no supplementary groups) when the test runs as root,
/// and as the test's own user otherwise: the kernel refuses its `open` exactly as it refuses a
/// webcam's node to a user outside the `video` group. Nothing in the fake camera or the library
/// pretends the refusal.
@Suite(
    "a camera this user may not open", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct CameraPermissionTests {
    /// The probe's output lines, split at tabs.
    struct ProbeResult {
        var lines: [[String]]
        var status: Int32
        func lines(_ kind: String) -> [[String]] { lines.filter { $0.first == kind } }
    }

    /// Runs `viewfinder-access-probe DIRECTORY`, as `nobody` when this process is root.
    static func probe(directory: String) throws -> ProbeResult {
        let built = Bundle.main.executableURL?.deletingLastPathComponent()
            .appendingPathComponent("viewfinder-access-probe").path(percentEncoded: false)
        let candidates = [built, FileManager.default.currentDirectoryPath + "/.build/debug/viewfinder-access-probe"]
        let executable = try #require(
            candidates.compactMap { $0 }.first(where: FileManager.default.isExecutableFile),
            "viewfinder-access-probe is not built: run swift build --build-tests")
        // A copy beside the camera, so the unprivileged user needs no access to the build directory.
        let copy = "\(directory)/viewfinder-access-probe"
        try FileManager.default.copyItem(atPath: executable, toPath: copy)
        chmod(copy, 0o755)
        let process = Process()
        if getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", copy, directory]
        } else {
            process.executableURL = URL(fileURLWithPath: copy)
            process.arguments = [directory]
        }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        return ProbeResult(lines: lines, status: process.terminationStatus)
    }

    @Test("an EACCES node is listed, authorization is denied, and opening it names the video group and the fix")
    func deniedCameraIsListed() throws {
        let rig = try FakeCameraRig()
        let camera = FakeCameraFile()
        let node = try rig.plug(camera, as: "video0")
        // This process may open it (it is a working camera with formats)…
        #expect(try !rig.device(camera).formats.isEmpty)
        // …the user examining it below may not.
        chmod(rig.directory, 0o755)
        #expect(chmod(node, 0) == 0)

        let result = try Self.probe(directory: rig.directory)
        #expect(result.status == 0)
        let uid = try #require(result.lines("uid").first?.last.flatMap { UInt32($0) })
        #expect(uid != 0, "the probe ran as root, which file modes do not stop")

        let devices = result.lines("device")
        #expect(devices.count == 1, "the camera is listed, not left out: \(result.lines)")
        let device = try #require(devices.first)
        #expect(device[2].contains("video0"), "named after its node, which QUERYCAP cannot name")
        #expect(device[3] == "0", "no formats: the node could not be asked")

        #expect(result.lines("authorization").first?.last == "denied")
        let authorizationError = try #require(result.lines("authorization-error").first)
        #expect(authorizationError[1] == "permissionDenied")
        #expect(authorizationError[2].contains("'video' group"))

        let open = try #require(result.lines("open-error").first, "opening the denied camera threw: \(result.lines)")
        #expect(open[1] == device[1])
        #expect(open[2] == "permissionDenied")
        #expect(open[3] == "\(EACCES)")
        #expect(open[4].contains("'video' group"))
        #expect(open[4].contains("sudo usermod -aG video $USER"))
        #expect(open[4].contains("log in again"))
        #expect(result.lines("open").isEmpty)
    }
}
