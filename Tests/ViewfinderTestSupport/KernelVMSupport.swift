import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel-driver tests' virtual machine (`Scripts/kernel-vm.sh`): its suites run only inside
/// it, where a missing driver is a failure, not a reason to skip.
package enum KernelVM {
    /// Whether this process runs in the VM (`VIEWFINDER_KERNEL_VM=1`, set by the script).
    package static let isInside = ProcessInfo.processInfo.environment["VIEWFINDER_KERNEL_VM"] == "1"

    /// Runs `tool` (looked up on `PATH`) with `arguments`; returns its exit status and its
    /// standard output and error, together.
    @discardableResult
    package static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The process's open descriptors of `/dev/video` nodes and its mappings of them: what a
    /// stream must leave behind as it found it.
    package static func resources() -> (descriptors: Int, deviceMappings: Int) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let descriptors = entries.filter { entry in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)")) ?? "")
                .hasPrefix("/dev/video")
        }.count
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        let mappings = maps.split(separator: "\n").filter { $0.contains(" /dev/video") }.count
        return (descriptors, mappings)
    }
}
