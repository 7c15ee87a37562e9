import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// A private D-Bus session bus (Debian's `dbus-daemon`, with a config of its own in a temporary
/// directory) and, optionally, the mock Camera portal (`Tests/PortalMock/camera_portal_mock.py`)
/// on it. Both are stopped when the bus is released (`stop()`).
package final class PortalTestBus {
    /// The bus's D-Bus address.
    package let address: String
    private let directory: URL
    private let daemon: Process
    private var mock: Process?
    private var mockInput: Pipe?
    private var mockOutput: FileHandle?

    package static let mockScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("PortalMock/camera_portal_mock.py").path

    /// Starts a bus and, with `mockArguments`, the mock portal on it; returns once the bus prints
    /// its address and the mock says it owns its names (they tell us on their stdout).
    package init(mockArguments: [String]?) throws {
        let daemonPath = "/usr/bin/dbus-daemon"
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            throw CaptureError(
                .deviceNotFound, "\(daemonPath) is missing: Scripts/install-dependencies.sh installs dbus-daemon")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("viewfinder-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(directory.path)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: daemonPath)
        daemon.arguments = ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address"]
        let daemonOutput = Pipe()
        daemon.standardOutput = daemonOutput
        daemon.standardError = FileHandle.nullDevice  // "Failed to set fd limit" without root: noise
        try daemon.run()
        address = try Self.readLine(daemonOutput.fileHandleForReading, from: "dbus-daemon")
        if let mockArguments { try startMock(mockArguments) }
    }

    /// The mock's next line of output ("request <path>" for each AccessCamera).
    package func nextMockLine() throws -> String {
        guard let mockOutput else { throw CaptureError(.invalidArgument, "no mock portal on this bus") }
        return try Self.readLine(mockOutput, from: "the mock portal")
    }

    private func startMock(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.mockScript] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        mock = process
        mockInput = input
        mockOutput = output.fileHandleForReading
        let line = try Self.readLine(output.fileHandleForReading, from: "the mock portal")
        guard line == "ready" else {
            throw CaptureError(
                .unknown, "the mock portal said \(line) instead of ready (python3-dbus and python3-gi installed?)")
        }
    }

    /// Stops the mock and the bus, and removes the directory. SIGKILL, because children started
    /// from the test's threads inherit their blocked signals: SIGTERM would stay pending.
    package func stop() {
        for process in [mock, daemon].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? mockInput?.fileHandleForWriting.close()
        mock = nil
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// Reads one line (blocking until it comes or the writer ends).
    package static func readLine(_ handle: FileHandle, from what: String) throws -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(handle.fileDescriptor, &byte, 1)
            if count == 1 {
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                throw CaptureError(.unknown, "\(what) ended before it printed a line")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A receiver that keeps every remote the portal handed over.
package final class RecordingRemoteReceiver: PipeWireRemoteReceiver {
    private let fds = Mutex<[Int32]>([])

    package func receivePipeWireRemote(_ fd: Int32) { fds.withLock { $0.append(fd) } }

    /// The remotes received so far (the receiver still owns them).
    package var received: [Int32] { fds.withLock { $0 } }

    deinit { for fd in fds.withLock({ $0 }) { close(fd) } }
}
