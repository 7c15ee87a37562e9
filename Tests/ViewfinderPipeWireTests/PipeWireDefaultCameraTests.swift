import Foundation
import Testing
import ViewfinderSimulator

@testable import ViewfinderCore
@testable import ViewfinderPipeWire
@testable import ViewfinderTestSupport

/// PipeWire's default video source (`default.video.source`, kept by WirePlumber in the `default`
/// metadata) as the system's choice of camera.
@Suite(
    "PipeWire's default video source as systemPreferredCamera", .serialized,
    .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
struct PipeWireDefaultCameraTests {
    /// Waits (round trips to the daemon, up to `timeout` seconds) until the connection reports
    /// `name` as the default video source.
    static func waitForDefault(_ name: String, on connection: PipeWireConnection, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            try? connection.sync()
            if connection.defaultVideoSourceName == name { return true }
        } while Date() < deadline
        return connection.defaultVideoSourceName == name
    }

    @Test("the node WirePlumber makes the default video source is the system's camera; the user's choice comes first")
    func defaultVideoSource() throws {
        let (registry, provider) = try PipeWireTestDaemon.registry()
        let first = PipeWireTestDaemon.uniqueName("default-a")
        let second = PipeWireTestDaemon.uniqueName("default-b")
        let cameraA = try PipeWireTestCamera(
            name: first, format: "yuyv", width: 320, height: 240, framesPerSecond: 30,
            remoteName: PipeWireTestDaemon.remote)
        defer { cameraA.close() }
        let cameraB = try PipeWireTestCamera(
            name: second, format: "yuyv", width: 320, height: 240, framesPerSecond: 30,
            remoteName: PipeWireTestDaemon.remote)
        defer { cameraB.close() }
        let deviceA = try #require(PipeWireTestDaemon.device("pipewire:\(first)", in: registry))
        let deviceB = try #require(PipeWireTestDaemon.device("pipewire:\(second)", in: registry))
        let connection = try #require(provider.openConnection)

        // What `wpctl set-default` does: WirePlumber then makes the node the default video source.
        // Should this WirePlumber not keep video defaults, the default is written as it would.
        let choice = "{\"name\":\"\(second)\"}"
        try connection.setDefaultMetadata("default.configured.video.source", json: choice)
        if !Self.waitForDefault(second, on: connection) {
            try connection.setDefaultMetadata("default.video.source", json: choice)
        }
        #expect(Self.waitForDefault(second, on: connection))

        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vf-preferred-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let preferences = PreferredCameras(
            store: PreferredCameraStore(file: home.appendingPathComponent("preferred-cameras.json")), registry: registry
        )
        #expect(preferences.systemPreferredCamera === deviceB)
        #expect(preferences.userPreferredCamera === deviceB)  // no history: the next best choice

        preferences.setUserPreferredCamera(deviceA)
        #expect(preferences.systemPreferredCamera === deviceA)
    }
}
