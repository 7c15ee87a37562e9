import CV4L2
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// Enumerates, reads and writes V4L2 controls on an open descriptor (`VIDIOC_QUERYCTRL` with
/// `V4L2_CTRL_FLAG_NEXT_CTRL`, `VIDIOC_QUERYMENU`, `VIDIOC_G_CTRL`, `VIDIOC_S_CTRL`).
///
/// Thread safety: a stateless namespace.
package enum V4L2ControlQuery {
    /// Every enabled integer, boolean, menu and button control of the device.
    package static func enumerate(fd: Int32, interface: any V4L2Interface) throws(V4L2Errno) -> [V4L2Control] {
        var controls: [V4L2Control] = []
        var query = v4l2_queryctrl()
        query.id = VF_V4L2_CTRL_FLAG_NEXT_CTRL
        while true {
            do {
                try interface.ioctl(fd, VF_VIDIOC_QUERYCTRL, &query)
            } catch  where error.code == EINVAL {
                break
            }
            if let control = try describe(query, fd: fd, interface: interface) { controls.append(control) }
            query.id |= VF_V4L2_CTRL_FLAG_NEXT_CTRL
        }
        return controls
    }

    private static func describe(
        _ query: v4l2_queryctrl, fd: Int32, interface: any V4L2Interface
    ) throws(V4L2Errno) -> V4L2Control? {
        guard query.flags & VF_V4L2_CTRL_FLAG_DISABLED == 0 else { return nil }
        let kind: CaptureDevice.Control.Kind
        switch query.type {
        case VF_V4L2_CTRL_TYPE_INTEGER: kind = .integer
        case VF_V4L2_CTRL_TYPE_BOOLEAN: kind = .boolean
        case VF_V4L2_CTRL_TYPE_MENU, VF_V4L2_CTRL_TYPE_INTEGER_MENU: kind = .menu
        case VF_V4L2_CTRL_TYPE_BUTTON: kind = .button
        default: return nil
        }
        var items: [CaptureDevice.Control.MenuItem] = []
        if kind == .menu, query.minimum <= query.maximum {
            for index in query.minimum...query.maximum {
                var item = v4l2_querymenu()
                item.id = query.id
                item.index = UInt32(bitPattern: index)
                // Drivers leave gaps in menus: EINVAL marks an index that is not a choice.
                do {
                    try interface.ioctl(fd, VF_VIDIOC_QUERYMENU, &item)
                } catch  where error.code == EINVAL {
                    continue
                }
                let name = query.type == VF_V4L2_CTRL_TYPE_INTEGER_MENU ? String(item.value) : v4l2String(item.name)
                items.append(.init(value: Int(index), name: name))
            }
        }
        return V4L2Control(
            id: query.id, name: v4l2String(query.name), kind: kind, minimum: Int(query.minimum),
            maximum: Int(query.maximum), step: Int(query.step), defaultValue: Int(query.default_value),
            menuItems: items, isReadOnly: query.flags & VF_V4L2_CTRL_FLAG_READ_ONLY != 0,
            isInactive: query.flags & VF_V4L2_CTRL_FLAG_INACTIVE != 0)
    }

    /// Reads control `id`.
    package static func value(of id: UInt32, fd: Int32, interface: any V4L2Interface) throws(V4L2Errno) -> Int {
        var control = v4l2_control(id: id, value: 0)
        try interface.ioctl(fd, VF_VIDIOC_G_CTRL, &control)
        return Int(control.value)
    }

    /// Writes control `id`.
    package static func setValue(_ value: Int, of id: UInt32, fd: Int32, interface: any V4L2Interface) throws(V4L2Errno)
    {
        var control = v4l2_control(id: id, value: Int32(clamping: value))
        try interface.ioctl(fd, VF_VIDIOC_S_CTRL, &control)
    }
}
