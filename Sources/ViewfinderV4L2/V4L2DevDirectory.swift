import CV4L2
import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// The real device directory: lists `videoN` nodes in `/dev` (or another directory) and watches it
/// with inotify, so cameras plugged in or out are noticed without polling. udev creates a node and
/// then sets its permissions, so attribute changes trigger a rescan too.
///
/// Thread safety: all members may be used from any thread.
package final class V4L2DevDirectory: V4L2DeviceDirectory {
    /// The directory scanned, `/dev` by default.
    package let path: String
    /// Holds the inotify read source, its descriptor and what it calls.
    // unchecked: a dispatch source is thread-safe to cancel; `isClosed` is confined to `queue`.
    private final class SourceBox: @unchecked Sendable {
        let source: any DispatchSourceRead
        let fd: Int32
        let onChange: @Sendable () -> Void
        var isClosed = false
        init(_ source: any DispatchSourceRead, fd: Int32, onChange: @escaping @Sendable () -> Void) {
            self.source = source
            self.fd = fd
            self.onChange = onChange
        }
    }
    private let source = Mutex<SourceBox?>(nil)
    private let queue = DispatchQueue(label: "viewfinder.v4l2.hotplug")
    /// Marks `queue`, so ``catchUp()`` called from a change's own handling returns at once.
    private static let onQueue = DispatchSpecificKey<Bool>()

    /// Where facts about the nodes' hardware are read (built-in or removable port).
    package let sysfs: V4L2Sysfs

    package init(path: String = "/dev", sysfs: V4L2Sysfs = V4L2Sysfs()) {
        self.path = path
        self.sysfs = sysfs
        queue.setSpecific(key: Self.onQueue, value: true)
    }

    package func portKind(ofNode node: String) -> V4L2PortKind {
        sysfs.portKind(ofNode: node)
    }

    /// Sysfs's USB facts plus the node's names in `v4l/by-id` and `v4l/by-path` under the directory.
    package func identity(ofNode node: String) -> V4L2NodeIdentity {
        var identity = sysfs.identity(ofNode: node)
        identity.byIDName = Self.udevName(in: "\(path)/v4l/by-id", resolvingTo: node)
        identity.byPathName = Self.udevName(in: "\(path)/v4l/by-path", resolvingTo: node)
        return identity
    }

    /// What can be learnt of a node this process may not open, from where anyone may read:
    /// sysfs's `name` and `index` of the node (a UVC camera's capture node is index 0, its
    /// metadata node 1), `nil` where nothing says. Read only when the node is the character device
    /// sysfs describes (its `dev` attribute names the node's device number): a `videoN` file in
    /// another directory (a test's) is not `/sys/class/video4linux/videoN`.
    package func unopenedNodeFacts(ofNode node: String) -> (name: String?, index: Int?) {
        var status = stat()
        guard stat(node, &status) == 0, status.st_mode & S_IFMT == S_IFCHR else { return (nil, nil) }
        let name = node.split(separator: "/").last.map(String.init) ?? node
        let attributes = "\(sysfs.root)/class/video4linux/\(name)"
        // glibc's major()/minor() are macros Swift does not import: their encoding of dev_t.
        let device = UInt64(status.st_rdev)
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        let number = "\(major):\(minor)"
        guard V4L2Sysfs.readAttribute("\(attributes)/dev") == number else { return (nil, nil) }
        return (
            V4L2Sysfs.readAttribute("\(attributes)/name"),
            V4L2Sysfs.readAttribute("\(attributes)/index").flatMap(Int.init)
        )
    }

    deinit {
        source.withLock { $0?.source.cancel() }
    }

    package func videoNodes() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        let nodes = names.filter { name in
            name.hasPrefix("video") && name.count > 5 && name.dropFirst(5).allSatisfy(\.isNumber)
        }
        return Self.sortedNumerically(nodes.map { "\(path)/\($0)" })
    }

    package func watch(_ onChange: @escaping @Sendable () -> Void) -> Bool {
        let fd = vf_inotify_init()
        guard fd >= 0 else { return false }
        guard vf_inotify_add_watch(fd, path) >= 0 else {
            Glibc.close(fd)
            return false
        }
        let readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let box = SourceBox(readSource, fd: fd, onChange: onChange)
        readSource.setEventHandler { Self.drain(box) }
        readSource.setCancelHandler {
            box.isClosed = true
            Glibc.close(fd)
        }
        let previous = source.withLock { stored in
            defer { stored = box }
            return stored
        }
        previous?.source.cancel()
        readSource.resume()
        return true
    }

    /// Handles every change made before the call: events the kernel queued that the watch has not
    /// read yet are read now, and the rescan they start (or one already under way) ends before
    /// this returns. Returns at once when called from that handling itself.
    package func catchUp() {
        guard DispatchQueue.getSpecific(key: Self.onQueue) == nil, let box = source.withLock({ $0 }) else { return }
        queue.sync { Self.drain(box) }
    }

    /// Reads the events queued on `box`'s descriptor (on `queue`); any of them may concern a video
    /// node, so one that does calls `onChange` once.
    private static func drain(_ box: SourceBox) {
        guard !box.isClosed else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var sawVideo = false
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(box.fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            sawVideo = sawVideo || mentionsVideoNode(buffer[..<count])
        }
        if sawVideo { box.onChange() }
    }

    /// Whether a batch of `struct inotify_event`s names a `video*` entry (or overflowed).
    private static func mentionsVideoNode(_ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        // struct inotify_event { int wd; uint32_t mask; uint32_t cookie; uint32_t len; char name[]; }
        while offset + 16 <= bytes.endIndex {
            func word(_ at: Int) -> UInt32 {
                (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
            }
            let mask = word(offset + 4)
            let length = Int(word(offset + 12))
            if mask & VF_IN_Q_OVERFLOW != 0 { return true }
            let nameStart = offset + 16
            let nameEnd = min(bytes.endIndex, nameStart + length)
            let name = bytes[nameStart..<nameEnd].prefix { $0 != 0 }
            if name.starts(with: Array("video".utf8)) { return true }
            offset = nameStart + length
        }
        return false
    }
}
