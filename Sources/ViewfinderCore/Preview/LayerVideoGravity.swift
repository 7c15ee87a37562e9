/// How a preview layer fits the video into its bounds (the counterpart of `AVLayerVideoGravity`).
///
/// ```swift
/// previewLayer.videoGravity = .resizeAspectFill   // fill the layer, cropping what does not fit
/// ```
public struct LayerVideoGravity: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The gravity's name.
    public let rawValue: String

    /// The gravity named `rawValue` (one of the three constants' raw values; another name behaves
    /// as ``resizeAspect``).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The whole picture, its aspect ratio kept, centred in the layer; the bands the picture does
    /// not cover (above and below, or left and right) are black. The default.
    public static let resizeAspect = LayerVideoGravity(rawValue: "LayerVideoGravityResizeAspect")

    /// The layer filled, the aspect ratio kept, centred: what overflows the layer is cropped.
    public static let resizeAspectFill = LayerVideoGravity(rawValue: "LayerVideoGravityResizeAspectFill")

    /// The picture stretched to the layer's bounds, whatever its aspect ratio.
    public static let resize = LayerVideoGravity(rawValue: "LayerVideoGravityResize")

    /// The gravity's name.
    public var description: String { rawValue }
}
