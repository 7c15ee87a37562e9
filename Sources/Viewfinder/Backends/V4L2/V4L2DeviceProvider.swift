/// Finds V4L2 capture devices (`/dev/video*`). The full backend arrives with the V4L2 issue;
/// until then this provider scans nothing.
struct V4L2DeviceProvider: DeviceProvider {
    var sortOrder: Int { 0 }
    func discoverBackends() -> [any DeviceBackend] { [] }
}
