import Viewfinder

/// The format listing of a USB webcam modelled on the Logitech C920 (USB 2 bandwidth caps raw YUYV at
/// large sizes; MJPG keeps 30 fps), as `v4l2-ctl --list-formats-ext` prints it.
extension SimulatedUVCCamera {
    /// A C920-like webcam: YUYV at 19 sizes (30 fps up to 800x448, 5 fps at 1920x1080, 2 fps above),
    /// MJPG at 17 sizes all at 30 fps. Pass it as a ``Configuration``'s `listing`.
    public static let c920Listing = #"""
        # A USB webcam modelled on a Logitech C920's published format listing (USB 2 bandwidth caps raw YUYV
        # at large sizes; MJPG keeps 30 fps). Format: what `v4l2-ctl --list-formats-ext` prints.
        # Card type     : HD Pro Webcam C920
        # Driver name   : uvcvideo
        # Bus info      : usb-0000:00:14.0-1
        ioctl: VIDIOC_ENUM_FMT
        	Type: Video Capture

        	[0]: 'YUYV' (YUYV 4:2:2)
        		Size: Discrete 640x480
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 160x90
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 160x120
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 176x144
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 320x180
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 320x240
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 352x288
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 432x240
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 640x360
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 800x448
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 800x600
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 864x480
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 960x720
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1024x576
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1280x720
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1600x896
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1920x1080
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 2304x1296
        			Interval: Discrete 0.500s (2.000 fps)
        		Size: Discrete 2304x1536
        			Interval: Discrete 0.500s (2.000 fps)
        	[1]: 'MJPG' (Motion-JPEG, compressed)
        		Size: Discrete 640x480
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 160x90
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 160x120
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 176x144
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 320x180
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 320x240
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 352x288
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 432x240
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 640x360
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 800x448
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 800x600
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 864x480
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 960x720
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1024x576
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1280x720
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1600x896
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        		Size: Discrete 1920x1080
        			Interval: Discrete 0.033s (30.000 fps)
        			Interval: Discrete 0.042s (24.000 fps)
        			Interval: Discrete 0.050s (20.000 fps)
        			Interval: Discrete 0.067s (15.000 fps)
        			Interval: Discrete 0.100s (10.000 fps)
        			Interval: Discrete 0.133s (7.500 fps)
        			Interval: Discrete 0.200s (5.000 fps)
        """#
}
