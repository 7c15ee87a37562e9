/// Where V4L2 device nodes live and how to hear that they came or went: `/dev` watched with
/// inotify in production (``V4L2DevDirectory``), a ``SimulatedV4L2Bus`` in tests.
///
/// Thread safety: implementations must accept calls from any thread.
import ViewfinderCore

package protocol V4L2DeviceDirectory: Sendable {
    /// The paths of the video device nodes present now (`/dev/video0`, …), in a stable order.
    func videoNodes() -> [String]
    /// Starts calling `onChange` (on any thread, possibly the caller's) whenever a video node may
    /// have appeared, disappeared or changed permissions. Returns `false` when the directory
    /// cannot be watched; the provider then rescans on every query instead.
    func watch(_ onChange: @escaping @Sendable () -> Void) -> Bool
    /// Makes sure every change made before the call has reached `onChange` (and what `onChange`
    /// started has ended) before it returns, for a watch that hears of changes later than they
    /// happen; returns at once when called from inside `onChange`.
    func catchUp()
    /// The kind of port the camera at `node` is on (from sysfs for real nodes).
    func portKind(ofNode node: String) -> V4L2PortKind
    /// What names the camera at `node` beyond its node number (serial, udev names, USB location).
    func identity(ofNode node: String) -> V4L2NodeIdentity
    /// What can be learnt of a node this process may not open, from where anyone may read
    /// (sysfs): its name and its index among its device's nodes (a UVC camera's capture node is
    /// 0, its metadata node 1); `nil` where nothing says.
    func unopenedNodeFacts(ofNode node: String) -> (name: String?, index: Int?)
}

extension V4L2DeviceDirectory {
    /// Nothing to catch up on by default: a directory that calls `onChange` as the change happens.
    package func catchUp() {}
    /// Unknown: directories without sysfs behind them cannot tell.
    package func portKind(ofNode node: String) -> V4L2PortKind { .unknown }
    /// Nothing beyond the node: directories without sysfs behind them cannot tell.
    package func identity(ofNode node: String) -> V4L2NodeIdentity { V4L2NodeIdentity() }
    /// Nothing: directories without sysfs behind them cannot tell.
    package func unopenedNodeFacts(ofNode node: String) -> (name: String?, index: Int?) { (nil, nil) }
}

extension V4L2DeviceDirectory {
    /// Sorts `video10` after `video9`.
    package static func sortedNumerically(_ paths: [String]) -> [String] {
        func number(_ path: String) -> Int {
            Int(path.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? 0
        }
        return paths.sorted { (number($0), $0) < (number($1), $1) }
    }
}
